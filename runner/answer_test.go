package runner

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

type fakeEngine struct {
	settled int
	inForce bool
}

func (e fakeEngine) Settled() int  { return e.settled }
func (e fakeEngine) InForce() bool { return e.inForce }

// The rule of a case that ends once answered, case by case.
func TestAnswerRule(t *testing.T) {
	pause := step(t, "client-pause", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, time.Second, time.Second, nil)
	spec := workload.Spec{Duration: 10 * time.Second, TTL: time.Second, Hold: workload.Dist{Kind: "uniform", A: 100 * time.Millisecond, B: 300 * time.Millisecond}}
	mk := func(expect verdict.Expectation, faults ...chaos.Step) Case {
		return Case{Approach: impls.Approach{Name: "r", Server: impls.Redis}, Workload: spec, Record: true, Expect: expect, Faults: faults}
	}
	doubleGrant := func() checker.Verdict {
		return checker.Verdict{Violations: []checker.Violation{{Kind: checker.DoubleGrantOutlived}}}
	}
	clean := func() checker.Verdict { return checker.Verdict{} }
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name      string
		c         Case
		ok        bool // the case may end early at all
		snapshot  func() checker.Verdict
		eng       engineState
		settledAt time.Time
		now       time.Time
		grants    int64
		want      bool
	}{
		{"violation shown, faults healed", mk(verdict.Expect("", verdict.DoubleGrant), pause), true, doubleGrant, fakeEngine{1, false}, t0, t0, 0, true},
		{"violation shown, a fault still in force", mk(verdict.Expect("", verdict.DoubleGrant), pause), true, doubleGrant, fakeEngine{0, true}, time.Time{}, t0, 0, false},
		{"violation not shown yet", mk(verdict.Expect("", verdict.DoubleGrant), pause), true, clean, fakeEngine{1, false}, t0, t0, 500, false},
		{"another violation than the one expected", mk(verdict.Expect("", verdict.LostUpdate), pause), true, doubleGrant, fakeEngine{1, false}, t0, t0, 500, false},
		{"safe: watched a lease and a hold after the fault, enough grants", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{1, false}, t0, t0.Add(1300 * time.Millisecond), minGrantsUnderFault, true},
		{"safe: not watched long enough", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{1, false}, t0, t0.Add(1200 * time.Millisecond), minGrantsUnderFault, false},
		{"safe: too few grants", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{1, false}, t0, t0.Add(time.Minute), minGrantsUnderFault - 1, false},
		{"safe: the fault's round not over", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{0, true}, time.Time{}, t0.Add(time.Minute), 1000, false},
		{"safe without faults: enough grants", mk(verdict.Expect("", verdict.Safe)), true, clean, nil, time.Time{}, t0, minGrantsNoFault, true},
		{"safe without faults: too few", mk(verdict.Expect("", verdict.Safe)), true, clean, nil, time.Time{}, t0, minGrantsNoFault - 1, false},
		{"blocked is decided by the last stretch", mk(verdict.Expect("", verdict.Safe, verdict.Blocked), pause), false, nil, nil, time.Time{}, t0, 0, false},
		{"forbidden unavailable too", mk(verdict.Expectation{Outcomes: []verdict.Outcome{verdict.Safe}, Forbidden: []verdict.Outcome{verdict.Unavailable}}, pause), false, nil, nil, time.Time{}, t0, 0, false},
		{"nothing expected", mk(verdict.Expectation{}, pause), false, nil, nil, time.Time{}, t0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := compileFaults(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			rule, ok := newAnswerRule(tc.c, plan)
			if ok != tc.ok {
				t.Fatalf("may end early = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if got := rule.answered(tc.snapshot, tc.eng, tc.now, tc.settledAt, tc.grants); got != tc.want {
				t.Fatalf("answered = %v, want %v", got, tc.want)
			}
		})
	}
}

// A case that ends once answered, end to end on the in-memory lock: a racy
// lock expected to show a double grant under contention stops a tail after
// it showed one, long before its 20 s; a safe one stops once it checked
// enough grants; without EndWhenAnswered both run their 20 s (the latter
// is cut by a deadline here: it must still be running at 3 s).
func TestCaseEndsOnceAnswered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		racy   bool
		expect verdict.Outcome
	}{{"racy lock, double grant expected", true, verdict.DoubleGrant}, {"safe lock, safe expected", false, verdict.Safe}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := memlock.NewService(1)
			svc.Racy = tc.racy
			p := memoryPlan(t, svc, 4, 20*time.Second)
			p.Cases[0].Expect = verdict.Expect("test", tc.expect)
			p.EndWhenAnswered = true
			began := time.Now()
			out, err := (&Runner{}).Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(began)
			r := out.Results.Runs[0]
			if r.Status != verdict.Agrees || !r.Answered || took > 10*time.Second {
				t.Fatalf("status %q (%s), answered %v, after %v: want as expected, answered well before 20 s", r.Status, r.Explanation, r.Answered, took)
			}
			if r.Seconds < answerTail.Seconds() {
				t.Fatalf("ended after %.2f s: the tail of %v is missing", r.Seconds, answerTail)
			}
			if !tc.racy && r.Acquired < minGrantsNoFault {
				t.Fatalf("ended after %d grants, want at least %d", r.Acquired, minGrantsNoFault)
			}
			// Without EndWhenAnswered the case runs on.
			p = memoryPlan(t, svc, 4, 20*time.Second)
			p.Cases[0].Expect = verdict.Expect("test", tc.expect)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			out, _ = (&Runner{}).Run(ctx, p)
			if out == nil || len(out.Results.Runs) != 1 || out.Results.Runs[0].Answered || out.Results.Runs[0].Seconds < 2.9 {
				t.Fatalf("without EndWhenAnswered the case ended early: %+v", out)
			}
		})
	}
}

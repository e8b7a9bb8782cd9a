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
	spec := workload.Spec{Duration: 10 * time.Second, Clients: 4, TTL: time.Second, Hold: workload.Dist{Kind: "uniform", A: 100 * time.Millisecond, B: 300 * time.Millisecond}}
	mk := func(expect verdict.Expectation, faults ...chaos.Step) Case {
		return Case{Approach: impls.Approach{Name: "r", Server: impls.Redis}, Workload: spec, Record: true, Expect: expect, Faults: faults}
	}
	doubleGrant := func() checker.Verdict {
		return checker.Verdict{Violations: []checker.Violation{{Kind: checker.DoubleGrantOutlived}}}
	}
	clean := func() checker.Verdict { return checker.Verdict{} }
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	healed := caseSoFar{now: at(2 * time.Second), firstFault: t0, settledAt: at(time.Second), grants: 10, settledAs: 5}
	for _, tc := range []struct {
		name     string
		c        Case
		ok       bool // the case may end early at all
		snapshot func() checker.Verdict
		eng      engineState
		so       caseSoFar
		want     bool
	}{
		{"violation shown, faults healed", mk(verdict.Expect("", verdict.DoubleGrant), pause), true, doubleGrant, fakeEngine{1, false}, healed, true},
		{"violation shown, a fault still in force", mk(verdict.Expect("", verdict.DoubleGrant), pause), true, doubleGrant, fakeEngine{0, true}, caseSoFar{now: t0, firstFault: t0}, false},
		{"violation not shown yet", mk(verdict.Expect("", verdict.DoubleGrant), pause), true, clean, fakeEngine{1, false}, healed, false},
		{"another violation than the one expected", mk(verdict.Expect("", verdict.LostUpdate), pause), true, doubleGrant, fakeEngine{1, false}, healed, false},
		{"safe: a lease since the fault, a grant per client after its round", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{1, false},
			caseSoFar{now: at(time.Second), firstFault: t0, settledAt: at(500 * time.Millisecond), grants: 8, settledAs: 4}, true},
		{"safe: less than a lease since the fault", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{1, false},
			caseSoFar{now: at(999 * time.Millisecond), firstFault: t0, settledAt: at(500 * time.Millisecond), grants: 8, settledAs: 4}, false},
		{"safe: too few grants after the round", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{1, false},
			caseSoFar{now: at(time.Minute), firstFault: t0, settledAt: at(500 * time.Millisecond), grants: 7, settledAs: 4}, false},
		{"safe: the fault's round not over", mk(verdict.Expect("", verdict.Safe), pause), true, clean, fakeEngine{0, true},
			caseSoFar{now: at(time.Minute), firstFault: t0, grants: 1000}, false},
		{"safe without faults: enough grants", mk(verdict.Expect("", verdict.Safe)), true, clean, nil, caseSoFar{now: t0, grants: minGrantsNoFault}, true},
		{"safe without faults: too few", mk(verdict.Expect("", verdict.Safe)), true, clean, nil, caseSoFar{now: t0, grants: minGrantsNoFault - 1}, false},
		{"blocked is decided by the last stretch", mk(verdict.Expect("", verdict.Safe, verdict.Blocked), pause), false, nil, nil, caseSoFar{}, false},
		{"forbidden unavailable too", mk(verdict.Expectation{Outcomes: []verdict.Outcome{verdict.Safe}, Forbidden: []verdict.Outcome{verdict.Unavailable}}, pause), false, nil, nil, caseSoFar{}, false},
		{"nothing expected", mk(verdict.Expectation{}, pause), false, nil, nil, caseSoFar{}, false},
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
			if got := rule.answered(tc.snapshot, tc.eng, tc.so); got != tc.want {
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
	t.Parallel() // servers of its own; it mostly waits on them
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
			// Before its 20 s by the case's own clock: how much before is
			// the machine's to say (10.8 s in all with both cores busy).
			if r.Status != verdict.Agrees || !r.Answered || r.Seconds > 19 {
				t.Fatalf("status %q (%s), answered %v, after %.1f s (%v in all): want as expected, answered before its 20 s", r.Status, r.Explanation, r.Answered, r.Seconds, took)
			}
			if r.Seconds < answerTail.Seconds() {
				t.Fatalf("ended after %.2f s: the tail of %v is missing", r.Seconds, answerTail)
			}
			if !tc.racy && r.Acquired < minGrantsNoFault {
				t.Fatalf("ended after %d grants, want at least %d", r.Acquired, minGrantsNoFault)
			}
			// Without EndWhenAnswered the case runs on until it is cut: the
			// run returns no sooner than its context's end (how much of
			// those 3 s the case itself had is the machine's to say: under
			// 2.9 s in a loaded make test).
			p = memoryPlan(t, svc, 4, 20*time.Second)
			p.Cases[0].Expect = verdict.Expect("test", tc.expect)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			out, _ = (&Runner{}).Run(ctx, p)
			if out == nil || len(out.Results.Runs) != 1 || out.Results.Runs[0].Answered || ctx.Err() == nil {
				t.Fatalf("without EndWhenAnswered the case ended before it was cut (%v): %+v", ctx.Err(), out)
			}
		})
	}
}

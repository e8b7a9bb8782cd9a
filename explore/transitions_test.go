package explore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
)

func TestTransitionsReadFromAHistory(t *testing.T) {
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	nem := func(t int64, id int64, op string, typ history.Type, fault string) history.Event {
		b, _ := json.Marshal(history.NemesisValue{ID: id, Op: op, Fault: fault})
		return history.Event{Proc: -1, Type: typ, F: history.Nemesis, Value: b, T: t}
	}
	ev := func(t int64, proc int, typ history.Type, f string, validUntil int64, err string) history.Event {
		return history.Event{Proc: proc, Type: typ, F: f, Key: "k0", T: t, ValidUntil: validUntil, Error: err}
	}
	for _, tc := range []struct {
		name   string
		events []history.Event
		want   []string
	}{
		{"a plain grant and release reach nothing rare", []history.Event{
			ev(ms(1), 1, history.Invoke, history.Acquire, 0, ""), ev(ms(2), 1, history.OK, history.Acquire, ms(1000), ""),
			ev(ms(10), 1, history.Invoke, history.Release, 0, ""), ev(ms(11), 1, history.OK, history.Release, 0, ""),
		}, []string{}},
		{"held past the lease, released not held, granted during a pause", []history.Event{
			nem(ms(0), 1, history.NemesisStart, history.OK, "client-pause"),
			ev(ms(1), 1, history.Invoke, history.Acquire, 0, ""), ev(ms(2), 1, history.OK, history.Acquire, ms(100), ""),
			nem(ms(50), 1, history.NemesisStop, history.OK, "client-pause"),
			ev(ms(300), 1, history.Invoke, history.Extend, 0, ""), ev(ms(301), 1, history.Fail, history.Extend, 0, "extend k0: not held"),
			ev(ms(400), 1, history.Invoke, history.Release, 0, ""), ev(ms(401), 1, history.Fail, history.Release, 0, "release k0: not held"),
		}, []string{ExpiryWhileHeld, GrantDuring + "client-pause", ReleaseNotHeld, RenewalAfterExpiry, RenewalRefused}},
		{"a renewal, a re-entry and a release asked under a fault", []history.Event{
			ev(ms(1), 1, history.Invoke, history.Acquire, 0, ""), ev(ms(2), 1, history.OK, history.Acquire, ms(1000), ""),
			nem(ms(10), 1, history.NemesisStart, history.OK, "drop-replies"),
			ev(ms(20), 1, history.Invoke, history.Extend, 0, ""), ev(ms(21), 1, history.OK, history.Extend, ms(1020), ""),
			{Proc: 1, Type: history.Invoke, F: history.Acquire, Key: "k0", T: ms(30), Reentry: true},
			{Proc: 1, Type: history.OK, F: history.Acquire, Key: "k0", T: ms(31), ValidUntil: ms(1031), Reentry: true},
			ev(ms(40), 1, history.Invoke, history.Release, 0, ""), ev(ms(41), 1, history.OK, history.Release, 0, ""),
			nem(ms(60), 1, history.NemesisStop, history.OK, "drop-replies"),
			// The outer release finds the hold still followed: past its
			// lease (renewed by the re-entry to 1.031 s), it is late.
			ev(ms(1100), 1, history.Invoke, history.Release, 0, ""),
		}, []string{ExpiryWhileHeld, ReentryDuring + "drop-replies", ReleaseDuring + "drop-replies", RenewalDuring + "drop-replies", Renewed}},
		{"an indeterminate acquire that left the key taken while another waited", []history.Event{
			ev(ms(1), 1, history.Invoke, history.Acquire, 0, ""), ev(ms(2), 1, history.Info, history.Acquire, 0, "indeterminate"),
			ev(ms(5), 2, history.Invoke, history.Acquire, 0, ""), ev(ms(900), 2, history.OK, history.Acquire, ms(1900), ""),
		}, []string{AcquireUnknown, AcquireTookEffect}},
		{"an indeterminate acquire that did not", []history.Event{
			ev(ms(1), 1, history.Invoke, history.Acquire, 0, ""), ev(ms(2), 1, history.Info, history.Acquire, 0, "indeterminate"),
			ev(ms(5), 2, history.Invoke, history.Acquire, 0, ""), ev(ms(6), 2, history.OK, history.Acquire, ms(1006), ""),
		}, []string{AcquireUnknown}},
		{"a holder crashed, its renewal kept it, a lost signal, a refused write", []history.Event{
			ev(ms(1), 1, history.Invoke, history.Acquire, 0, ""), ev(ms(2), 1, history.OK, history.Acquire, ms(100), ""),
			ev(ms(30), 1, history.Invoke, history.Extend, 0, ""), ev(ms(31), 1, history.OK, history.Extend, ms(130), ""),
			{Proc: 1, Type: history.Info, F: history.Lost, Key: "k0", T: ms(40)},
			{Proc: 1, Type: history.Fail, F: history.Write, Key: "k0", T: ms(41), Error: "stale fencing token"},
			{Proc: 1, Type: history.Info, F: history.Crash, T: ms(50)},
		}, []string{FencedWriteRefused, HolderCrashed, LostSignal, Renewed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := transitions(tc.events)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// A searcher that steers mutates the schedules that reached a rare
// transition more often than those that reached only common ones; one
// that does not steer only ever draws fresh schedules.
func TestSteeringFavoursRareTransitions(t *testing.T) {
	p := profileOf(t, "redis-setnx-px-lua")
	common, rare := Generate(p, 1, 100), Generate(p, 1, 101)
	cov := NewCoverage()
	s := NewSearcher(p, 9, true, cov)
	s.Feedback(1, rare, []string{"grant-during:partition", "renewal-after-expiry"})
	for run := 2; run < 12; run++ {
		s.Feedback(run, common, []string{"grant-during:partition"})
	}
	// The common schedule was kept while its transition was rare (its
	// first runs); the rare one's transition is still seen once only.
	picks := map[bool]int{}
	for range 400 {
		k := s.pick()
		picks[reflect.DeepEqual(k.s, rare)]++
	}
	if picks[true] <= 2*picks[false] {
		t.Errorf("the schedule that reached a rare transition was picked %d times, the common one %d", picks[true], picks[false])
	}
	if cov.Counts["renewal-after-expiry"] != 1 || cov.First["renewal-after-expiry"] != 1 || cov.First["grant-during:partition"] != 1 {
		t.Errorf("coverage %v, first %v", cov.Counts, cov.First)
	}
	mutants := 0
	for range 50 {
		if _, o := s.Next(); o.Fresh < 0 {
			mutants++
		}
	}
	if mutants < 7 || mutants > 27 {
		t.Errorf("%d of 50 schedules mutated, want about a third", mutants)
	}
	dice := NewSearcher(p, 9, false, NewCoverage())
	dice.Feedback(1, rare, []string{"renewal-after-expiry"})
	for i := range 20 {
		if s, o := dice.Next(); o.Fresh != i || !reflect.DeepEqual(s, Generate(p, 9, i)) {
			t.Fatalf("without steering, schedule %d is not fresh schedule %d of the seed", i, i)
		}
	}
}

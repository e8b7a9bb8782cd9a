package explore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
)

// A double grant whose class a rule predicts is still new when it came
// about by a mechanism no entry of the matrix's mechanisms gives the
// approach; known when one does, or when the checker names none.
func TestMechanismMakesAKnownClassNew(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	e := &explorer{cfg: Config{Expect: matrix.NewExpectations(m, reg)}}
	w := big().Workload
	for _, tc := range []struct {
		approach, mechanism string
		known               bool
	}{
		{"redis-setnx-px-lua", "", true},
		{"redis-setnx-px-lua", checker.ReleasedOverAnother, false},
		{"redis-setnx-px-lua", checker.RenewedOverAnother, false},
		{"redis-setnx-px-del", checker.ReleasedOverAnother, true},
		{"redis-setnx-px-del", checker.RenewedOverAnother, false},
	} {
		a, err := reg.Get(tc.approach)
		if err != nil {
			t.Fatal(err)
		}
		srch := &Search{Approach: a.Name, approach: a}
		j, mech := e.judge(srch, []string{"client-pause"}, w, verdict.DoubleGrantOutlived, tc.mechanism, false)
		if j.Known != tc.known {
			t.Errorf("%s by %q: known %v, want %v (%s)", tc.approach, tc.mechanism, j.Known, tc.known, j.Why)
		}
		if !tc.known && (mech != tc.mechanism || !strings.Contains(j.Why, tc.mechanism)) {
			t.Errorf("%s by %q: mechanism %q, why %q", tc.approach, tc.mechanism, mech, j.Why)
		}
	}
}

// A class's sighting carries the mechanism of the first of its double
// grants that has one, with that one's proof; a trial for a finding new
// by mechanism shows it only where that mechanism shows.
func TestSightingsCarryTheMechanism(t *testing.T) {
	v := checker.Verdict{Violations: []checker.Violation{
		{Kind: checker.DoubleGrantBothValid, Text: "plain"},
		{Kind: checker.DoubleGrantBothValid, Text: "by release", Mechanism: checker.ReleasedOverAnother},
	}}
	ss := sightings(v, nil)
	if len(ss) != 1 || ss[0].Count != 2 || ss[0].Mechanism != checker.ReleasedOverAnother || ss[0].Proof != "by release" {
		t.Fatalf("sightings %+v", ss)
	}
	res := runner.CaseResult{Check: v}
	free := verdict.Freeing{Never: true, Scale: 1e9}
	for _, tc := range []struct {
		mechanism string
		shown     bool
	}{{"", true}, {checker.ReleasedOverAnother, true}, {checker.RenewedOverAnother, false}} {
		if got := trial(res, "c", verdict.DoubleGrantBothValid, tc.mechanism, false, free); got.Shown != tc.shown {
			t.Errorf("trial for %q: shown %v, want %v", tc.mechanism, got.Shown, tc.shown)
		}
	}
}

// A client clock fault explains a double grant with both leases valid
// only through a holder believing in a lease past its end: one granted
// inside the first holder's lease as it stood at its grant is new under a
// client clock fault alone, and still known where another fault's rule
// predicts it.
func TestClockFaultExplainsOnlyAnOverlongBelief(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	e := &explorer{cfg: Config{Expect: matrix.NewExpectations(m, reg)}}
	a, err := reg.Get("redis-setnx-px-lua")
	if err != nil {
		t.Fatal(err)
	}
	srch := &Search{Approach: a.Name, approach: a}
	for _, tc := range []struct {
		kinds   []string
		inLease bool
		known   bool
	}{
		{[]string{"client-clock"}, false, true},
		{[]string{"client-clock"}, true, false},
		{[]string{"client-clock", "server-restart"}, true, true},
		{[]string{"server-restart"}, true, true},
	} {
		j, _ := e.judge(srch, tc.kinds, big().Workload, verdict.DoubleGrantBothValid, "", tc.inLease)
		if j.Known != tc.known {
			t.Errorf("%v, in lease %v: known %v, want %v (%s)", tc.kinds, tc.inLease, j.Known, tc.known, j.Why)
		}
		if !j.Known && !strings.Contains(j.Why, "as it stood at its grant") {
			t.Errorf("%v: why %q does not say why the clock does not explain it", tc.kinds, j.Why)
		}
	}

	const ms = int64(1e6)
	jump, _ := json.Marshal(history.NemesisValue{ID: 1, Op: history.NemesisStart, Fault: "client-clock", Params: map[string]string{"offset": "-2s"}})
	drift, _ := json.Marshal(history.NemesisValue{ID: 1, Op: history.NemesisStart, Fault: "client-clock", Params: map[string]string{"rate": "-0.8"}})
	for _, tc := range []struct {
		name          string
		second, clock int64 // the second grant; a client clock move (0: none)
		value         []byte
		inLease       bool
	}{
		{"inside the first lease", 500 * ms, 0, jump, true},
		{"past the first lease", 1200 * ms, 0, jump, false},
		{"inside, a clock moved during the first acquire", 500 * ms, 5 * ms, jump, false},
		{"inside, a clock moved after the first grant", 500 * ms, 100 * ms, jump, true},
		{"inside, a clock drifting since before the first acquire", 500 * ms, -5 * ms, drift, false},
		{"inside, a clock drifting from after the first grant", 500 * ms, 100 * ms, drift, true},
	} {
		events := []history.Event{
			{Index: 0, Proc: 1, Type: history.Invoke, F: history.Acquire, Key: "k0", T: 0},
			{Index: 1, Proc: 1, Type: history.OK, F: history.Acquire, Key: "k0", T: 10 * ms, ValidUntil: 1000 * ms},
			{Index: 2, Proc: 2, Type: history.Invoke, F: history.Acquire, Key: "k0", T: 20 * ms},
			{Index: 3, Proc: 2, Type: history.OK, F: history.Acquire, Key: "k0", T: tc.second, ValidUntil: tc.second + 1000*ms},
		}
		if tc.clock != 0 {
			clock := history.Event{Index: 4, Proc: -1, Type: history.OK, F: history.Nemesis, T: tc.clock, Value: tc.value}
			if tc.clock < 0 {
				events = append([]history.Event{clock}, events...)
			} else {
				events = append(events, clock)
			}
		}
		v := checker.Verdict{
			Violations: []checker.Violation{{Kind: checker.DoubleGrantBothValid, Key: "k0", Events: []int64{1, 3}, Text: "both"}},
			DoubleGrants: []checker.DoubleGrant{{Key: "k0", Kind: checker.BothValid,
				Held:   checker.Interval{Key: "k0", Proc: 1, Start: 10 * ms, StartIndex: 1, ValidUntil: 1000 * ms},
				Second: checker.Interval{Key: "k0", Proc: 2, Start: tc.second, StartIndex: 3, ValidUntil: tc.second + 1000*ms}}},
		}
		ss := sightings(v, events)
		if len(ss) != 1 || ss[0].Class != verdict.DoubleGrantBothValid || ss[0].InLease != tc.inLease {
			t.Errorf("%s: sightings %+v, want in lease %v", tc.name, ss, tc.inLease)
		}
		// How much of the first lease was left is in the proof.
		if left := "had 500ms left"; len(ss) == 1 && tc.inLease != strings.Contains(ss[0].Proof, left) {
			t.Errorf("%s: proof %q; want %q in it: %v", tc.name, ss[0].Proof, left, tc.inLease)
		}
	}
}

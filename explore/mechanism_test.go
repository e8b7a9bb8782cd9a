package explore

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
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
		j, mech := e.judge(srch, []string{"client-pause"}, w, verdict.DoubleGrantOutlived, tc.mechanism)
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
		if got := trial(res, "c", verdict.DoubleGrantBothValid, tc.mechanism, free); got.Shown != tc.shown {
			t.Errorf("trial for %q: shown %v, want %v", tc.mechanism, got.Shown, tc.shown)
		}
	}
}

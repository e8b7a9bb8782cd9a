package verdict

import (
	"maps"
	"testing"

	"github.com/locklab/locklab/checker"
)

func TestCompare(t *testing.T) {
	obs := func(checked bool, kinds ...Outcome) Observed {
		o := Observed{Counts: map[Outcome]int{}, Checked: checked}
		for _, k := range kinds {
			o.Counts[k]++
		}
		return o
	}
	tests := []struct {
		name   string
		exp    Expectation
		obs    Observed
		want   Status
		missed bool // contradicts only for want of an expected violation
	}{
		{"safe and clean", Expect("", Safe), obs(true), Agrees, false},
		{"safe but double grant", Expect("", Safe), obs(true, DoubleGrantBothValid), Contradicts, false},
		{"safe, refused stale writes are fine", Expect("", Safe), obs(true, StaleWriteRefused), Agrees, false},
		{"safe but not recorded", Expect("", Safe), obs(false), Undecided, false},
		{"expected double grant of either kind", Expect("", DoubleGrant), obs(true, DoubleGrantOutlived), Agrees, false},
		{"expected outlived, saw both-valid only", Expect("", DoubleGrantOutlived), obs(true, DoubleGrantBothValid), Contradicts, true},
		{"expected violation never seen", Expect("", DoubleGrantOutlived, LostUpdate), obs(true, DoubleGrantOutlived), Contradicts, true},
		{"expected violation, extra ones fine", Expect("", LostUpdate), obs(true, LostUpdate, DoubleGrantOutlived), Agrees, false},
		{"expected blocked", Expect("", Blocked), obs(true, Blocked), Agrees, false},
		{"nothing expected", Expectation{}, obs(true, DoubleGrantBothValid), Agrees, false},
		{"safe and blocked", Expect("", Safe, Blocked), obs(true, Blocked), Agrees, false},
		{"safe, blocked expected but the lock came free", Expect("", Safe, Blocked), obs(true), Contradicts, true},
		{"fenced: outlived but no lost update", Expectation{Outcomes: []Outcome{DoubleGrantOutlived, StaleWriteRefused}, Forbidden: []Outcome{LostUpdate}},
			obs(true, DoubleGrantOutlived, StaleWriteRefused), Agrees, false},
		{"fenced: a lost update is forbidden", Expectation{Outcomes: []Outcome{DoubleGrantOutlived}, Forbidden: []Outcome{LostUpdate}},
			obs(true, DoubleGrantOutlived, LostUpdate), Contradicts, false},
		{"expected violation, not recorded", Expect("", LostUpdate), obs(false), Undecided, false},
		{"safe but nothing granted", Expect("", Safe), Observed{Counts: map[Outcome]int{}, Checked: true, NothingGranted: true}, Undecided, false},
		{"safe and blocked, nothing granted", Expect("", Safe, Blocked), Observed{Counts: map[Outcome]int{Blocked: 1}, Checked: true, NothingGranted: true}, Undecided, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(tt.exp, tt.obs)
			if r.Status != tt.want {
				t.Fatalf("status = %q (%s), want %q", r.Status, r.Text, tt.want)
			}
			if r.Text == "" {
				t.Fatal("no explanation")
			}
			if r.Missed != tt.missed {
				t.Fatalf("missed = %v, want %v (%s)", r.Missed, tt.missed, r.Text)
			}
		})
	}
}

func TestObserveClassifiesCheckerClasses(t *testing.T) {
	tests := []struct {
		class checker.Class
		want  Outcome
	}{
		{checker.DoubleGrantOutlived, DoubleGrantOutlived},
		{checker.DoubleGrantBothValid, DoubleGrantBothValid},
		{checker.DoubleGrantNeverReleased, DoubleGrant},
		{checker.Revoked, Revoked},
		{checker.PhantomRelease, PhantomRelease},
		{checker.LostUpdate, LostUpdate},
		{checker.StaleWrite, StaleWrite},
		{checker.DuplicateTask, TaskTwice},
		{checker.TokenRegressed, TokenRegressed},
		{"a class this table does not know", NonLinearizable},
	}
	for _, tt := range tests {
		t.Run(string(tt.class), func(t *testing.T) {
			v := checker.Verdict{Linearizable: checker.LinNo, Violations: []checker.Violation{{Kind: tt.class}}}
			o := Observe(v, true, Liveness{})
			if o.Counts[tt.want] != 1 || len(o.Counts) != 1 {
				t.Fatalf("observed %v, want one %s", o.Counts, tt.want)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	v := checker.Verdict{Linearizable: checker.LinNo, RefusedWrites: 2, Violations: []checker.Violation{
		{Kind: checker.DoubleGrantOutlived}, {Kind: checker.LostUpdate}}}
	o := Observe(v, true, Liveness{Blocked: true, Unavailable: 3})
	want := map[Outcome]int{DoubleGrantOutlived: 1, LostUpdate: 1, StaleWriteRefused: 2, Blocked: 1, Unavailable: 3}
	if !maps.Equal(o.Counts, want) {
		t.Errorf("observed %v, want %v (non-linearizable is not counted when finer classes explain it)", o.Counts, want)
	}
	if got := Observe(checker.Verdict{Linearizable: checker.LinNo}, true, Liveness{}); got.Counts[NonLinearizable] != 1 {
		t.Errorf("an unexplained non-linearizable verdict must count: %v", got.Counts)
	}
	// A revocation during a release is an anomaly the checker reports, not
	// a violation: the case stays safe.
	revoked := checker.Verdict{Linearizable: checker.LinYes, Anomalies: []checker.Violation{{Kind: checker.RevokedInRelease}}}
	if got := Observe(revoked, true, Liveness{}); !got.Has(Safe) || len(got.Counts) != 0 {
		t.Errorf("a revocation during a release made the case unsafe: %+v", got)
	}
	if got := Observe(checker.Verdict{Linearizable: checker.LinYes}, true, Liveness{}); !got.Has(Safe) {
		t.Errorf("a clean, checked verdict must be safe: %+v", got)
	}
	if got := Observe(v, false, Liveness{}); got.Has(Safe) || len(got.Counts) != 0 {
		t.Errorf("nothing recorded: nothing observed, and not safe: %+v", got)
	}
}

func TestParse(t *testing.T) {
	if _, err := Parse("double-grant:outlived"); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("double grant"); err == nil {
		t.Fatal("a misspelt outcome must be refused")
	}
}

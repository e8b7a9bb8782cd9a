package verdict

import (
	"testing"

	"github.com/locklab/locklab/checker"
)

func TestCompare(t *testing.T) {
	obs := func(checked, undecided bool, kinds ...Outcome) Observed {
		o := Observed{Counts: map[Outcome]int{}, Checked: checked, Undecided: undecided}
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
		{"safe and clean", Expect("", Safe), obs(true, false), Agrees, false},
		{"safe but double grant", Expect("", Safe), obs(true, false, DoubleGrantBothValid), Contradicts, false},
		{"safe, refused stale writes are fine", Expect("", Safe), obs(true, false, StaleWriteRefused), Agrees, false},
		{"safe but undecided", Expect("", Safe), obs(true, true), Undecided, false},
		{"safe but not recorded", Expect("", Safe), obs(false, false), Undecided, false},
		{"violation undecided still contradicts", Expect("", Safe), obs(true, true, LostUpdate), Contradicts, false},
		{"expected double grant of either kind", Expect("", DoubleGrant), obs(true, false, DoubleGrantOutlived), Agrees, false},
		{"expected outlived, saw both-valid only", Expect("", DoubleGrantOutlived), obs(true, false, DoubleGrantBothValid), Contradicts, true},
		{"expected violation never seen", Expect("", DoubleGrantOutlived, LostUpdate), obs(true, false, DoubleGrantOutlived), Contradicts, true},
		{"expected violation, extra ones fine", Expect("", LostUpdate), obs(true, false, LostUpdate, DoubleGrantOutlived), Agrees, false},
		{"expected blocked", Expect("", Blocked), obs(true, false, Blocked), Agrees, false},
		{"nothing expected", Expectation{}, obs(true, false, DoubleGrantBothValid), Agrees, false},
		{"safe and blocked", Expect("", Safe, Blocked), obs(true, false, Blocked), Agrees, false},
		{"safe, blocked expected but the lock came free", Expect("", Safe, Blocked), obs(true, false), Contradicts, true},
		{"fenced: outlived but no lost update", Expectation{Outcomes: []Outcome{DoubleGrantOutlived, StaleWriteRefused}, Forbidden: []Outcome{LostUpdate}},
			obs(true, false, DoubleGrantOutlived, StaleWriteRefused), Agrees, false},
		{"fenced: a lost update is forbidden", Expectation{Outcomes: []Outcome{DoubleGrantOutlived}, Forbidden: []Outcome{LostUpdate}},
			obs(true, false, DoubleGrantOutlived, LostUpdate), Contradicts, false},
		{"expected violation, not checked", Expect("", LostUpdate), obs(true, true), Undecided, false},
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

func TestObserveClassifiesCheckerKinds(t *testing.T) {
	v := checker.Verdict{Linearizable: "no", RefusedWrites: 2, Violations: []checker.Violation{
		{Kind: "double grant: " + checker.OutlivedLease}, {Kind: "double grant: " + checker.BothValid},
		{Kind: checker.LostUpdate}, {Kind: checker.DuplicateTask}, {Kind: checker.TokenRegressed}, {Kind: checker.StaleWrite},
	}}
	o := Observe(v, true, Liveness{Blocked: true})
	for _, want := range []Outcome{DoubleGrantOutlived, DoubleGrantBothValid, LostUpdate, TaskTwice, TokenRegressed, StaleWrite, StaleWriteRefused, Blocked} {
		if o.Counts[want] == 0 {
			t.Errorf("%s not observed: %v", want, o.Counts)
		}
	}
	if o.Counts[NonLinearizable] != 0 {
		t.Errorf("non-linearizable counted although finer classes explain it")
	}
	if got := Observe(checker.Verdict{Linearizable: "no"}, true, Liveness{}); got.Counts[NonLinearizable] != 1 {
		t.Errorf("an unexplained non-linearizable verdict must count: %v", got.Counts)
	}
	if got := Observe(checker.Verdict{Linearizable: "unknown"}, true, Liveness{}); !got.Undecided {
		t.Error("unknown linearizability must be undecided")
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

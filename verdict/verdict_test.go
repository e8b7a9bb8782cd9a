package verdict

import (
	"maps"
	"slices"
	"strings"
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
		{"nothing expected, nothing recorded", Expectation{}, obs(false), Agrees, false},
		{"safe and blocked", Expect("", Safe, Blocked), obs(true, Blocked), Agrees, false},
		{"safe, blocked expected but the lock came free", Expect("", Safe, Blocked), obs(true), Contradicts, true},
		{"fenced: outlived but no lost update", Expectation{Outcomes: []Outcome{DoubleGrantOutlived, StaleWriteRefused}, Forbidden: []Outcome{LostUpdate}},
			obs(true, DoubleGrantOutlived, StaleWriteRefused), Agrees, false},
		{"fenced: a lost update is forbidden", Expectation{Outcomes: []Outcome{DoubleGrantOutlived}, Forbidden: []Outcome{LostUpdate}},
			obs(true, DoubleGrantOutlived, LostUpdate), Contradicts, false},
		{"expected violation, not recorded", Expect("", LostUpdate), obs(false), Undecided, false},
		{"safe but nothing granted", Expect("", Safe), Observed{Counts: map[Outcome]int{}, Checked: true, NothingGranted: true}, Undecided, false},
		{"safe and blocked, nothing granted", Expect("", Safe, Blocked), Observed{Counts: map[Outcome]int{Blocked: 1}, Checked: true, NothingGranted: true}, Undecided, false},
		{"a violation expected, nothing granted", Expect("", DoubleGrantBothValid), Observed{Counts: map[Outcome]int{}, Checked: true, NothingGranted: true}, Undecided, false},
		{"a violation expected, granted, not shown", Expect("", DoubleGrantBothValid), obs(true), Contradicts, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(tt.exp, tt.obs)
			if len(r.Unexpected) > 0 {
				t.Fatalf("unexpected %v with no Unpredicted", r.Unexpected)
			}
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

// The classes whose outcome is not the one of their own name: a policy,
// pinned.
func TestObserveClassifiesCheckerClasses(t *testing.T) {
	tests := []struct {
		class checker.Class
		want  Outcome
	}{
		{checker.DoubleGrantHeldAtOnce, DoubleGrantBothValid},
		{checker.DoubleGrantNeverReleased, DoubleGrant},
		{checker.DuplicateTask, TaskTwice},
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

// A violation the expectation does not name and nothing predicts
// (Unpredicted) contradicts, named first; one a rule predicts, or any under
// at-least, is reported; one the expectation names is expected.
func TestCompareUnexpected(t *testing.T) {
	obs := func(kinds ...Outcome) Observed {
		o := Observed{Counts: map[Outcome]int{}, Checked: true}
		for _, k := range kinds {
			o.Counts[k]++
		}
		return o
	}
	pause := map[Outcome]string{DoubleGrantBothValid: "no rule predicts both-valid", PhantomRelease: "no rule predicts phantom-release"}
	lease := Expectation{Outcomes: []Outcome{DoubleGrantOutlived, LostUpdate}, Unpredicted: pause}
	atLeast := lease
	atLeast.AtLeast = true
	generic := Expectation{Outcomes: []Outcome{DoubleGrant}, Unpredicted: pause}
	nothing := Expectation{Unpredicted: pause}
	tests := []struct {
		name       string
		exp        Expectation
		obs        Observed
		want       Status
		unexpected []Outcome
		textStarts string
	}{
		{"expected classes only", lease, obs(DoubleGrantOutlived, LostUpdate), Agrees, nil, "expected double-grant:outlived + lost-update, observed"},
		{"a predicted extra (revoked is not unpredicted)", lease, obs(DoubleGrantOutlived, LostUpdate, Revoked), Agrees, nil, "expected"},
		{"both-valid nothing predicts", lease, obs(DoubleGrantOutlived, LostUpdate, DoubleGrantBothValid), Contradicts, []Outcome{DoubleGrantBothValid},
			"expected double-grant:outlived + lost-update, observed double-grant:both-valid, which nothing predicts (no rule predicts both-valid); also observed double-grant:outlived, lost-update"},
		{"unexpected outranks a miss", lease, obs(DoubleGrantBothValid), Contradicts, []Outcome{DoubleGrantBothValid}, "expected double-grant:outlived + lost-update, observed double-grant:both-valid"},
		{"at least: reported, not failed", atLeast, obs(DoubleGrantOutlived, LostUpdate, DoubleGrantBothValid), Agrees, nil, "expected at least"},
		{"named by the expectation (double-grant)", generic, obs(DoubleGrantBothValid), Agrees, nil, "expected double-grant"},
		{"nothing expected, unpredicted shows", nothing, obs(PhantomRelease), Contradicts, []Outcome{PhantomRelease}, "expected anything, observed phantom-release"},
		{"nothing expected, predicted shows", nothing, obs(LostUpdate), Agrees, nil, "expected anything"},
		{"safe decides alone", Expectation{Outcomes: []Outcome{Safe}, Unpredicted: pause}, obs(DoubleGrantBothValid), Contradicts, nil, "expected safe"},
		{"may: shown, agrees", Expectation{Forbidden: []Outcome{DoubleGrantOutlived}, May: []Outcome{DoubleGrantBothValid}, Unpredicted: pause},
			obs(DoubleGrantBothValid), Agrees, nil, "expected not double-grant:outlived + maybe double-grant:both-valid, observed"},
		{"may: not shown, agrees", Expectation{Forbidden: []Outcome{DoubleGrantOutlived}, May: []Outcome{DoubleGrantBothValid}, Unpredicted: pause},
			obs(), Agrees, nil, "expected not double-grant:outlived + maybe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(tt.exp, tt.obs)
			if r.Status != tt.want {
				t.Fatalf("status = %q (%s), want %q", r.Status, r.Text, tt.want)
			}
			if r.Missed {
				t.Errorf("missed: an unexpected violation is never a miss (%s)", r.Text)
			}
			if !slices.Equal(r.Unexpected, tt.unexpected) {
				t.Errorf("unexpected = %v, want %v", r.Unexpected, tt.unexpected)
			}
			if !strings.HasPrefix(r.Text, tt.textStarts) {
				t.Errorf("text %q, want it to start %q", r.Text, tt.textStarts)
			}
		})
	}
}

// An unexpected violation decides a contradiction: when the expected one
// came clear of every stall but each unexpected one fell in a stall, the
// lab may have made the unexpected ones, and the case is undecided.
func TestLabStalledWeighsTheUnexpected(t *testing.T) {
	e := Expectation{Outcomes: []Outcome{DoubleGrantOutlived}, Unpredicted: map[Outcome]string{DoubleGrantBothValid: "no rule"}}
	o := Observed{Counts: map[Outcome]int{DoubleGrantOutlived: 1, DoubleGrantBothValid: 1}, Checked: true}
	r := Compare(e, o)
	if r.Status != Contradicts {
		t.Fatalf("compare: %s", r.Text)
	}
	d := Decisive{Run: Span{0, 100}, Violations: map[Outcome][]Placed{
		DoubleGrantOutlived:  {{Span: Span{10, 20}, Procs: []int{1, 2}}},
		DoubleGrantBothValid: {{Span: Span{50, 60}, Procs: []int{2, 3}}},
	}}
	in := []Stall{{Who: "locklab", Proc: -1, Span: Span{45, 65}}}
	if got := LabStalled(r, e, d, in); got.Status != Undecided {
		t.Errorf("both-valid in a stall of locklab: %s, want undecided", got.Status)
	}
	clear := []Stall{{Who: "locklab", Proc: -1, Span: Span{5, 25}}}
	if got := LabStalled(r, e, d, clear); got.Status != Contradicts {
		t.Errorf("both-valid clear of the stall: %s, want it to stand", got.Status)
	}
}

// Files write an expectation as a list: names, not:X, may:X.
func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string // Names() back, or the error
	}{
		{[]string{"double-grant:outlived", "not:lost-update", "may:revoked"}, "double-grant:outlived not:lost-update may:revoked"},
		{[]string{"safe", "blocked"}, "safe blocked"},
		{[]string{"safe", "lost-update"}, "safe cannot go with lost-update"},
		{[]string{"safe", "may:lost-update"}, "safe cannot go with lost-update"},
		{[]string{"may:safe"}, "safe is all or nothing"},
		{[]string{"not:may:revoked"}, "not: or may:, not both"},
		{[]string{"may:doom"}, `unknown outcome "doom"`},
	} {
		e, err := ParseList(tc.names)
		got := strings.Join(e.Names(), " ")
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.names, got, tc.want)
		}
	}
}

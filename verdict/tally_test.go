package verdict

import "testing"

// TestTally: the one rule for repeated runs. Misses of an expected
// violation are tolerated down to Need; a violation not expected fails
// however many runs agreed; too few verdicts leave the case undecided.
func TestTally(t *testing.T) {
	agree := Result{Status: Agrees}
	missed := Result{Status: Contradicts, Missed: true}
	unsafe := Result{Status: Contradicts}
	undecided := Result{Status: Undecided}
	rs := func(r ...Result) []Result { return r }
	tests := []struct {
		name      string
		runs      []Result
		violation bool // the case expects a violation
		policy    Policy
		want      Status
	}{
		{"no runs", nil, false, Policy{}, NotRun},
		{"all agreed, all needed", rs(agree, agree, agree), false, Policy{}, Agrees},
		{"one missed, all needed", rs(agree, missed, agree), true, Policy{}, Contradicts},
		{"one missed within need", rs(agree, missed, agree), true, Policy{Need: 2}, Agrees},
		{"two missed past need", rs(missed, missed, agree), true, Policy{Need: 2}, Contradicts},
		{"unexpected violation, one needed", rs(agree, unsafe, agree), false, Policy{Need: 1}, Contradicts},
		{"unexpected violation, none missed", rs(unsafe), false, Policy{Need: 1}, Contradicts},
		{"undecided short of need", rs(agree, undecided, undecided), false, Policy{Need: 2}, Undecided},
		{"undecided within need", rs(agree, undecided, agree), false, Policy{Need: 2}, Agrees},
		{"all undecided", rs(undecided, undecided), true, Policy{Need: 1, MinCatchRate: 0.9}, Undecided},
		{"one catch is enough", rs(agree, missed), true, Policy{Need: 1}, Agrees},
		{"catch rate met", rs(agree, missed), true, Policy{Need: 1, MinCatchRate: 0.5}, Agrees},
		{"catch rate missed", rs(agree, missed), true, Policy{Need: 1, MinCatchRate: 0.95}, Contradicts},
		{"catch rate is of the decided runs", rs(agree, agree, agree, undecided), true, Policy{Need: 1, MinCatchRate: 0.95}, Agrees},
		{"catch rate missed among the decided", rs(agree, missed, agree, undecided), true, Policy{Need: 1, MinCatchRate: 0.95}, Contradicts},
		{"catch rate of half the runs decided", rs(agree, undecided), true, Policy{Need: 1, MinCatchRate: 0.95}, Agrees},
		{"catch rate of fewer than half decided", rs(agree, undecided, undecided), true, Policy{Need: 1, MinCatchRate: 0.95}, Undecided},
		{"catch rate does not apply to a safe case", rs(agree, undecided), false, Policy{Need: 1, MinCatchRate: 0.95}, Agrees},
		{"nothing caught", rs(missed, missed), true, Policy{Need: 1}, Contradicts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := Tally{ExpectsViolation: tt.violation}
			for _, r := range tt.runs {
				tl.Add(r)
			}
			if got := tl.Status(tt.policy); got != tt.want {
				t.Errorf("%+v under %+v: %q, want %q", tl, tt.policy, got, tt.want)
			}
		})
	}
}

func TestTallyCounts(t *testing.T) {
	var tl Tally
	for _, r := range []Result{{Status: Agrees}, {Status: Contradicts, Missed: true}, {Status: Contradicts}, {Status: Undecided}, {Status: Agrees}} {
		tl.Add(r)
	}
	want := Tally{Runs: 5, Agreed: 2, Missed: 1, Contradicted: 1, Undecided: 1}
	if tl != want {
		t.Errorf("tally %+v, want %+v", tl, want)
	}
	if got := tl.CatchRate(); got != 0.5 {
		t.Errorf("catch rate %v, want 0.5 (2 of the 4 decided runs)", got)
	}
}

func TestExpectsViolation(t *testing.T) {
	for _, tt := range []struct {
		expected []Outcome
		want     bool
	}{
		{nil, false},
		{[]Outcome{Safe}, false},
		{[]Outcome{Safe, Blocked}, false},
		{[]Outcome{StaleWriteRefused}, false},
		{[]Outcome{DoubleGrantOutlived, StaleWriteRefused}, true},
		{[]Outcome{LostUpdate}, true},
	} {
		if got := ExpectsViolation(tt.expected); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.expected, got, tt.want)
		}
	}
}

// TallyBy groups runs by name in order of first appearance, each group's
// expectation of a violation taken from its own runs.
func TestTallyBy(t *testing.T) {
	agree := Result{Status: Agrees, Expected: []Outcome{Safe}}
	caught := Result{Status: Agrees, Expected: []Outcome{DoubleGrantOutlived}}
	missed := Result{Status: Contradicts, Missed: true, Expected: []Outcome{DoubleGrantOutlived}}
	got := TallyBy([]string{"b", "a", "b", "a"}, []Result{caught, agree, missed, agree})
	want := []Named{
		{Name: "b", Tally: Tally{ExpectsViolation: true, Runs: 2, Agreed: 1, Missed: 1}},
		{Name: "a", Tally: Tally{Runs: 2, Agreed: 2}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("group %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

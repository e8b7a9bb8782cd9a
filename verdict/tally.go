package verdict

import "slices"

// Policy is when repeated runs of one case, taken together, behaved as
// expected: `run --runs N --need K`, bench repeats and the matrix's cells.
type Policy struct {
	// Need is how many runs must agree (0: all of them). Only runs that
	// missed an expected violation may make up the rest: that is the lab
	// failing to show it, which a few runs may. A run that showed a
	// violation it was not expected to fails the case however many agreed;
	// runs short of Need for want of a verdict leave it undecided.
	Need int
	// MinCatchRate: in a case that expects a violation, the share of its
	// decided runs that must have shown it, at least half its runs
	// decided (0: Need decides alone).
	MinCatchRate float64
}

// Needed is how many of runs must agree: Need, or all of them.
func (p Policy) Needed(runs int) int {
	if p.Need == 0 {
		return runs
	}
	return p.Need
}

// Tally counts the runs of one case by how each compared with the
// expectation.
type Tally struct {
	// ExpectsViolation: the case expects an unsafe outcome (a catch the lab
	// must make), which MinCatchRate is about.
	ExpectsViolation bool
	Runs             int
	Agreed           int
	Missed           int // contradicted only for want of an expected violation (Result.Missed)
	Contradicted     int // showed a violation (or a forbidden outcome) not expected
	Undecided        int
}

// ExpectsViolation reports whether expected names an unsafe outcome.
func ExpectsViolation(expected []Outcome) bool {
	return slices.ContainsFunc(expected, Outcome.Unsafe)
}

// Add counts one run's result.
func (t *Tally) Add(r Result) { t.AddStatus(r.Status, r.Missed) }

// AddStatus counts one run by its status and Result.Missed, as results
// files keep them.
func (t *Tally) AddStatus(s Status, missed bool) {
	t.Runs++
	switch {
	case s == Agrees:
		t.Agreed++
	case s == Contradicts && missed:
		t.Missed++
	case s == Contradicts:
		t.Contradicted++
	default:
		t.Undecided++
	}
}

// Status is how the runs together compare under p: NotRun without runs;
// Contradicts when one showed a violation not expected, when fewer than
// Need agreed and some missed, or when too few caught the expected
// violation; Undecided when fewer than Need agreed for want of verdicts.
func (t Tally) Status(p Policy) Status {
	need := p.Needed(t.Runs)
	switch {
	case t.Runs == 0:
		return NotRun
	case t.Contradicted > 0:
		return Contradicts
	case t.Agreed < need && t.Missed > 0:
		return Contradicts
	case t.ExpectsViolation && p.MinCatchRate > 0 && t.Decided() > 0 && t.CatchRate() < p.MinCatchRate:
		return Contradicts
	case t.Agreed < need:
		return Undecided
	case t.ExpectsViolation && p.MinCatchRate > 0 && 2*t.Decided() < t.Runs:
		// A rate of a few runs measures little.
		return Undecided
	}
	return Agrees
}

// Decided is how many runs had a verdict.
func (t Tally) Decided() int { return t.Runs - t.Undecided }

// CatchRate is the share of the decided runs that agreed: in a case that
// expects a violation, those that showed it. A run the lab's stalls left
// undecided showed nothing either way; how many were is bounded apart.
func (t Tally) CatchRate() float64 {
	if t.Decided() == 0 {
		return 0
	}
	return float64(t.Agreed) / float64(t.Decided())
}

// Named is the tally of one group of runs (an approach's, a matrix
// cell's).
type Named struct {
	Name string
	Tally
}

// TallyBy counts results into one tally per name (names[i] is results[i]'s
// group), in order of first appearance.
func TallyBy(names []string, results []Result) []Named {
	var out []Named
	at := map[string]int{}
	for i, r := range results {
		j, ok := at[names[i]]
		if !ok {
			j = len(out)
			at[names[i]] = j
			out = append(out, Named{Name: names[i]})
		}
		t := &out[j].Tally
		t.ExpectsViolation = t.ExpectsViolation || ExpectsViolation(r.Expected)
		t.Add(r)
	}
	return out
}

// Package verdict decides whether a case behaved as expected. It is pure:
// Observe turns what the checker found (and a little of what the workload
// measured) into outcomes, Compare holds them against an expectation. The
// CLI maps the result to exit codes; nothing else decides "as expected".
package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Parse reads an outcome name as scenario files write it.
func Parse(s string) (Outcome, error) {
	if r, ok := Outcome(s).Row(); ok {
		return r.Outcome, nil
	}
	names := make([]string, len(table))
	for i, r := range table {
		names[i] = string(r.Outcome)
	}
	return "", fmt.Errorf("unknown outcome %q (known: %s)", s, strings.Join(names, ", "))
}

// Observed is what a case showed.
type Observed struct {
	Counts map[Outcome]int // how often each outcome showed (Safe never appears here)
	// Checked is false when nothing was recorded (--no-history): nothing
	// can be said about safety.
	Checked bool
	// NothingGranted: no grant at all, so "safe" would be vacuous.
	NothingGranted bool
}

// Unsafe lists the unsafe outcomes observed, sorted.
func (o Observed) Unsafe() []Outcome {
	var out []Outcome
	for k, n := range o.Counts {
		if n > 0 && k.Unsafe() {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Has reports whether the expected outcome showed.
func (o Observed) Has(expected Outcome) bool {
	if expected == Safe {
		return o.Checked && len(o.Unsafe()) == 0
	}
	for k, n := range o.Counts {
		if n > 0 && k.Satisfies(expected) {
			return true
		}
	}
	return false
}

// Expectation is what a case must show. Empty: nothing is expected (an
// approach known to be unsafe, benched for speed): every observation agrees.
type Expectation struct {
	Outcomes []Outcome // each must show; Safe: no unsafe outcome may show
	// Forbidden outcomes must not show (scenario files write "not:lost-update"):
	// a fenced store must lose no update even though the holder outlived
	// its lease.
	Forbidden []Outcome
	// May outcomes may show and need not (files write "may:double-grant:both-valid"):
	// what a mechanism makes likely but not certain, predicted all the same.
	May []Outcome
	// AtLeast: Outcomes are the least the case must show, and any other
	// violation may show too (scenario files write {at-least: [...]}).
	AtLeast bool
	// Unpredicted are the unsafe outcomes nothing predicts of this case,
	// each with why (no rule of matrix/expectations.yaml predicts it for
	// the approach under the case's faults): one of them showing
	// contradicts. Nil: only Outcomes and Forbidden decide (a bench's
	// case, a hand-built expectation), and others seen are reported.
	Unpredicted map[Outcome]string
	Why         string // where the expectation comes from (a scenario, a capability, a source)
}

// Expect builds an expectation.
func Expect(why string, outcomes ...Outcome) Expectation {
	return Expectation{Outcomes: outcomes, Why: why}
}

// Names are the expectation as results files list it: each outcome, then
// each forbidden one as "not:" and its name (as scenario files write it).
func (e Expectation) Names() []string {
	var out []string
	for _, o := range e.Outcomes {
		out = append(out, string(o))
	}
	for _, o := range e.Forbidden {
		out = append(out, "not:"+string(o))
	}
	for _, o := range e.May {
		out = append(out, "may:"+string(o))
	}
	return out
}

// ParseList reads an expectation as files write it: each outcome by name,
// "not:" before one that must not show, "may:" before one that may.
func ParseList(names []string) (Expectation, error) {
	var e Expectation
	for _, name := range names {
		rest, not := strings.CutPrefix(name, "not:")
		rest, may := strings.CutPrefix(rest, "may:")
		o, err := Parse(rest)
		if err != nil {
			return e, err
		}
		switch {
		case not && may:
			return e, fmt.Errorf("%q: not: or may:, not both", name)
		case not:
			e.Forbidden = append(e.Forbidden, o)
		case may:
			if o == Safe {
				return e, fmt.Errorf("%q: safe is all or nothing, never may", name)
			}
			e.May = append(e.May, o)
		default:
			e.Outcomes = append(e.Outcomes, o)
		}
	}
	if slices.Contains(e.Outcomes, Safe) {
		for _, o := range slices.Concat(e.Outcomes, e.May) {
			if o.Unsafe() {
				return e, fmt.Errorf("safe cannot go with %s", o)
			}
		}
	}
	return e, nil
}

func (e Expectation) String() string {
	var s []string
	for _, o := range e.Outcomes {
		s = append(s, string(o))
	}
	for _, o := range e.Forbidden {
		s = append(s, "not "+string(o))
	}
	for _, o := range e.May {
		s = append(s, "maybe "+string(o))
	}
	if len(s) == 0 {
		return "anything"
	}
	if e.AtLeast {
		return "at least " + strings.Join(s, " + ")
	}
	return strings.Join(s, " + ")
}

// unexpected are the unsafe outcomes observed that e neither expects nor
// leaves open: those it lists as Unpredicted and no expected outcome
// matches, sorted.
func (e Expectation) unexpected(o Observed) []Outcome {
	if e.AtLeast {
		return nil
	}
	var out []Outcome
	for _, x := range o.Unsafe() {
		if _, ok := e.Unpredicted[x]; !ok {
			continue
		}
		if !slices.ContainsFunc(e.Outcomes, x.Satisfies) && !slices.ContainsFunc(e.May, x.Satisfies) {
			out = append(out, x)
		}
	}
	return out
}

// Status is how a case compares with its expectation.
type Status string

const (
	Agrees      Status = "as expected"
	Contradicts Status = "contradicts expectation"
	// Undecided: the expectation could not be verified (the history was
	// not fully checked, or not recorded). A gate never passes it.
	Undecided Status = "undecided"
	// NotRun: no run of a repeated case (a matrix cell) finished.
	NotRun Status = "not run"
)

// Result is the comparison of one case.
type Result struct {
	Status   Status    `json:"status"`
	Expected []Outcome `json:"expected"`
	Observed []Outcome `json:"observed"`          // unsafe outcomes seen, plus refused stale writes, blocked, unavailable
	Missing  []Outcome `json:"missing,omitempty"` // expected, not seen
	// Unexpected are the unsafe outcomes seen that nothing predicts
	// (Expectation.Unpredicted): each contradicts.
	Unexpected []Outcome `json:"unexpected,omitempty"`
	// Forbidden are the outcomes seen that the expectation forbids.
	Forbidden []Outcome `json:"forbidden,omitempty"`
	Text      string    `json:"text"` // one line, in words
	// Missed: it contradicts only because an expected violation did not
	// show (the lab failed to demonstrate it), not because of anything
	// unsafe that showed. Repeated runs may tolerate a few misses; never
	// an unexpected violation.
	Missed bool `json:"missed,omitempty"`
	// LabStalled: undecided because the lab itself stalled during the
	// events that decide the comparison (LabStalled, the function).
	LabStalled bool `json:"lab_stalled,omitempty"`
}

// Compare holds what a case showed against what it should have shown.
//   - Expected safe: any unsafe outcome contradicts; no check (nothing
//     recorded) is undecided.
//   - Expected violations: each must have shown (the lab must keep its
//     power to catch them).
//   - A violation seen that the expectation does not name and nothing
//     predicts (Expectation.Unpredicted) contradicts, listed first; one a
//     rule predicts, or any under "at least", is reported, not failed.
//   - Nothing expected: agrees, unless an unpredicted violation showed;
//     a run with no history (nothing checked) says so.
func Compare(e Expectation, o Observed) Result {
	r := Result{Expected: e.Outcomes, Observed: observedList(o)}
	wantSafe := false
	for _, x := range e.Outcomes {
		if x == Safe {
			wantSafe = true
			continue
		}
		if !o.Has(x) {
			r.Missing = append(r.Missing, x)
		}
	}
	bad := o.Unsafe()
	for _, x := range e.Forbidden {
		if o.Has(x) {
			r.Forbidden = append(r.Forbidden, x)
		}
	}
	if !wantSafe {
		r.Unexpected = e.unexpected(o)
	}
	switch {
	case len(r.Forbidden) > 0 || len(r.Unexpected) > 0:
		r.Status = Contradicts
		var parts []string
		if len(r.Forbidden) > 0 {
			parts = append(parts, "observed "+joinOutcomes(r.Forbidden))
		}
		for _, x := range r.Unexpected {
			parts = append(parts, fmt.Sprintf("observed %s, which nothing predicts (%s)", x, e.Unpredicted[x]))
		}
		r.Text = fmt.Sprintf("expected %s, %s", e, strings.Join(parts, "; "))
		if rest := others(r.Observed, r.Forbidden, r.Unexpected); len(rest) > 0 {
			r.Text += "; also observed " + joinOutcomes(rest)
		}
	case wantSafe && len(bad) > 0:
		r.Status = Contradicts
		r.Text = fmt.Sprintf("expected safe, observed %s", joinOutcomes(bad))
	case ExpectsViolation(r.Missing) && o.NothingGranted:
		r.Status = Undecided
		r.Text = fmt.Sprintf("expected %s, but no client was ever granted the lock: there was no grant to break", e)
	case len(r.Missing) > 0 && o.Checked:
		r.Status, r.Missed = Contradicts, true
		r.Text = fmt.Sprintf("expected %s, never observed %s", e, joinOutcomes(r.Missing))
	case (wantSafe || len(r.Missing) > 0 || len(e.Forbidden) > 0) && !o.Checked:
		r.Status = Undecided
		r.Text = fmt.Sprintf("expected %s, but the history was not fully checked", e)
	case wantSafe && o.NothingGranted:
		r.Status = Undecided
		r.Text = fmt.Sprintf("expected %s, but no client was ever granted the lock: mutual exclusion was never exercised", e)
	case !o.Checked && len(r.Observed) == 0:
		r.Status = Agrees
		r.Text = fmt.Sprintf("expected %s; no history was recorded, so nothing was checked", e)
	default:
		r.Status = Agrees
		r.Text = fmt.Sprintf("expected %s, observed %s", e, describe(r.Observed))
	}
	return r
}

// Deciding are the outcomes seen that made r contradict: those forbidden
// and those nothing predicts, or every unsafe one when safety was
// expected. None when r agrees, is undecided, or only missed an expected
// violation (what did not show decided it).
func (r Result) Deciding() []Outcome {
	if r.Status != Contradicts || r.Missed {
		return nil
	}
	var out []Outcome
	for _, o := range r.Observed {
		if slices.ContainsFunc(r.Forbidden, o.Satisfies) || slices.Contains(r.Unexpected, o) {
			out = append(out, o)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, o := range r.Observed {
		if o.Unsafe() {
			out = append(out, o)
		}
	}
	return out
}

// others are the outcomes of all not among the deciding ones.
func others(all []Outcome, deciding ...[]Outcome) []Outcome {
	var out []Outcome
	for _, o := range all {
		if !slices.ContainsFunc(deciding, func(d []Outcome) bool { return slices.ContainsFunc(d, o.Satisfies) }) {
			out = append(out, o)
		}
	}
	return out
}

func observedList(o Observed) []Outcome {
	var out []Outcome
	for k, n := range o.Counts {
		if n > 0 {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func describe(os []Outcome) string {
	if len(os) == 0 {
		return "no violation"
	}
	return joinOutcomes(os)
}

func joinOutcomes(os []Outcome) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

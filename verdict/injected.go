package verdict

// NotInjected judges r again knowing that none of the case's planned
// faults took effect (why: the injections' errors, as "nobody held k0
// within 2s"): the case never asked its question. An expected violation
// that did not show, or an expected-safe case that saw nothing unsafe, is
// undecided then; a violation that showed anyway stands (the lock broke
// without the fault's help).
func NotInjected(r Result, e Expectation, why string) Result {
	switch {
	case r.Status == Contradicts && r.Missed:
	case r.Status == Agrees && !ExpectsViolation(e.Outcomes):
	default:
		return r
	}
	r.Status, r.Missed = Undecided, false
	r.Text = "inconclusive: the fault never took effect (" + why + "); " + r.Text
	return r
}

package verdict

import (
	"fmt"
	"slices"
)

// NotInjected judges r again knowing that none of the case's planned
// faults took effect (why: the injections' errors, as "nobody held k0
// within 2s"): the case never asked its question. An expected violation
// that did not show is undecided then; a violation that showed anyway
// stands (the lock broke without the fault's help), and so does an
// expected-safe case that saw nothing unsafe: it held under what did run,
// and on a loaded runner a holder not found in time would otherwise make
// every such gate undecided now and then.
//
// An agreeing case says so in its text: safe under what ran is not safe
// under the fault, and a user reading "as expected" must see the
// difference.
func NotInjected(r Result, why string) Result {
	if r.Status == Agrees && !ExpectsViolation(r.Expected) {
		r.Text += "; the fault never took effect (" + why + "): this says nothing of the lock under it"
		return r
	}
	if r.Status != Contradicts || !r.Missed {
		return r
	}
	r.Status, r.Missed = Undecided, false
	r.Text = "inconclusive: the fault never took effect (" + why + "); " + r.Text
	return r
}

// NoGrantAfterFault judges r again knowing that nobody was granted the
// lock from the time the first fault took effect to the end of the case:
// a double grant, and what follows from one, needed a grant there. An
// expected violation that did not show is undecided then (a starved
// server grants nobody for seconds); a violation that showed stands. Over
// repeated runs a lock that truly blocks under the fault reads undecided
// in every run, which no gate passes.
func NoGrantAfterFault(r Result) Result {
	if r.Status != Contradicts || !r.Missed || !ExpectsViolation(r.Missing) {
		return r
	}
	r.Status, r.Missed = Undecided, false
	r.Text = "inconclusive: nobody was granted the lock after the fault took effect, so no second grant could show; " + r.Text
	return r
}

// ServersUnrecovered judges r again knowing that the case's servers failed
// their health check after every fault was healed (why: the check's
// error). That is a finding about the servers, not the lock: a case that
// agreed still does, and says so; a violation that showed stands; an
// expected violation that did not show is undecided (it may have needed
// the servers back). An expectation that names unrecovered was judged by
// Compare already.
func ServersUnrecovered(r Result, e Expectation, why string) Result {
	if slices.Contains(slices.Concat(e.Outcomes, e.May, e.Forbidden), Unrecovered) {
		return r
	}
	switch {
	case r.Status == Agrees:
		r.Text += "; the servers did not recover after the faults (" + why + "): a finding about the servers, not the lock"
	case r.Status == Contradicts && r.Missed:
		r.Status, r.Missed = Undecided, false
		r.Text = "inconclusive: the servers did not recover after the faults (" + why + "); " + r.Text
	}
	return r
}

// Tenure is one hold of a key as the checker placed it (monotonic ns):
// Learned is when its holder was told the lock was no longer its own (its
// release or extend answered "not held", or a loss signal; 0: never).
type Tenure struct {
	Key                 string
	Proc                int
	Start, End, Learned int64
}

// LapsedUntaken finds a hold that a fault aimed at it struck (one of
// struck starting within it) whose holder was then told the lock was gone,
// while no other client was granted the key from the fault to the hold's
// end: the lock lapsed under its holder and nobody took it, so no second
// grant could show. (Under two busy loops and twelve cases at once, a
// Redlock waiter's rounds, 10 ms per node on a 1 s lease, failed for the
// 0.6-0.85 s the lock lay free on all five nodes while its clock-jumped
// holder worked on.)
func LapsedUntaken(holds []Tenure, struck []Span) (Tenure, bool) {
	for _, h := range holds {
		if h.Learned == 0 || !slices.ContainsFunc(struck, func(w Span) bool { return h.Start <= w.Start && w.Start <= h.End }) {
			continue
		}
		taken := slices.ContainsFunc(holds, func(o Tenure) bool {
			return o.Key == h.Key && o.Proc != h.Proc && h.Start < o.Start && o.Start <= h.End
		})
		if !taken {
			return h, true
		}
	}
	return Tenure{}, false
}

// Untaken judges r again knowing h, a hold that lapsed under its holder
// with nobody granted the key before it ended (LapsedUntaken; origin: the
// case's first event): an expected double grant, or what follows from one,
// that did not show is undecided, since the lock had come free for a
// second holder who never came. A lock that kept its holder's hold would
// not have told it the lock was gone; one whose waiters never take a free
// lock reads undecided in every run, which no gate passes.
func Untaken(r Result, h Tenure, origin int64) Result {
	if r.Status != Contradicts || !r.Missed || !ExpectsViolation(r.Missing) {
		return r
	}
	for _, o := range r.Missing {
		if o.Unsafe() && !o.IsDoubleGrant() && !o.FollowsFromDoubleGrant() {
			return r
		}
	}
	r.Status, r.Missed = Undecided, false
	r.Text = fmt.Sprintf("inconclusive: the lock lapsed under client %d's hold on %s (told at %.2f s), and nobody else was granted it before that hold ended at %.2f s, so no second grant could show; %s",
		h.Proc, h.Key, seconds(h.Learned-origin), seconds(h.End-origin), r.Text)
	return r
}

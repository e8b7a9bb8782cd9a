package explore

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/verdict"
)

// Sighting is one class of violation a case showed: how often, and the
// first violation of it in words, with the events that prove it.
type Sighting struct {
	Class verdict.Outcome
	Count int
	Proof string
	// Stated is the outcome a scenario file states for it: the class, or
	// "double-grant" for a double grant the checker calls both valid and
	// explore counts as outlived (see sightings).
	Stated verdict.Outcome
	// Mechanism is how one of its double grants came about, where the
	// checker names it (checker.RenewedOverAnother, ...); Proof is then
	// that one's.
	Mechanism string
	// InLease: a double grant with both leases valid came while the first
	// holder's lease, as it stood when granted, had time left, and no
	// client clock moved during that holder's acquire; Proof is then that
	// one's. A client clock moved later explains it only through a
	// holder believing in a lease past its end: not this (a waiter whose
	// own clock ran ahead and took the lock is).
	InLease bool
}

// sightings are the unsafe classes in a checker verdict, each once, in the
// order of their first violation. A double grant counts as both leases
// valid only when both were: a grant whose lease had already run out by
// its holder's own clock when the grant reached it (a reply held back
// past the lease, a client paused while its acquire was answered) is that
// holder outliving its lease, whatever the first holder's lease said.
func sightings(v checker.Verdict, events []history.Event) []Sighting {
	grantAt := map[int64]history.Event{}
	for _, ev := range events {
		if ev.F == history.Acquire && ev.Type == history.OK {
			grantAt[ev.Index] = ev
		}
	}
	clocked := clockedGrants(events)
	var out []Sighting
	add := func(c, stated verdict.Outcome, proof, mechanism string, inLease bool) {
		for i := range out {
			if out[i].Class == c {
				out[i].Count++
				if out[i].Stated != c && stated == c {
					out[i].Stated = c // seen as the checker calls it too
				}
				switch {
				case out[i].Mechanism == "" && mechanism != "":
					out[i].Mechanism, out[i].Proof = mechanism, proof
				case out[i].Mechanism == "" && !out[i].InLease && inLease:
					out[i].Proof = proof
				}
				out[i].InLease = out[i].InLease || inLease
				return
			}
		}
		out = append(out, Sighting{Class: c, Count: 1, Proof: proof, Stated: stated, Mechanism: mechanism, InLease: inLease})
	}
	for _, x := range v.Violations {
		c := verdict.OutcomeOf(x.Kind)
		stated, proof := c, x.Text
		inLease := false
		if c == verdict.DoubleGrantBothValid {
			if bornExpired(v, x, grantAt) {
				c, stated = verdict.DoubleGrantOutlived, verdict.DoubleGrant
				proof += "; the second holder's own lease had run out before its grant reached it"
			} else if left, ok := grantedInLease(v, x, grantAt, clocked); ok {
				// How much was left tells a grant at the lease's very end
				// (a clock off by milliseconds) from one well inside it.
				inLease = true
				proof += fmt.Sprintf("; granted while the first holder's lease, as it stood at its grant, had %s left", left)
			}
		}
		if c.Unsafe() {
			add(c, stated, proof, x.Mechanism, inLease)
		}
	}
	if len(out) == 0 && v.Linearizable == checker.LinNo {
		add(verdict.NonLinearizable, verdict.NonLinearizable, "the history is not linearizable", "", false)
	}
	return out
}

// doubleGrantOf is the double grant violation x names.
func doubleGrantOf(v checker.Verdict, x checker.Violation) (checker.DoubleGrant, bool) {
	for _, d := range v.DoubleGrants {
		if slices.Equal(x.Events, []int64{d.Held.StartIndex, d.Second.StartIndex}) {
			return d, true
		}
	}
	return checker.DoubleGrant{}, false
}

// bornExpired reports whether the double grant x names was granted to a
// holder whose lease had already ended by its own belief, as its grant's
// event recorded it (grantAt: the grants by index).
func bornExpired(v checker.Verdict, x checker.Violation, grantAt map[int64]history.Event) bool {
	d, ok := doubleGrantOf(v, x)
	if !ok {
		return false
	}
	vu, t := d.Second.ValidUntil, d.Second.Start
	if ev, ok := grantAt[d.Second.StartIndex]; ok {
		vu, t = ev.ValidUntil, ev.T
	}
	return vu != 0 && vu <= t
}

// grantedInLease reports whether the double grant x names came while the
// first holder's lease as recorded at its grant had time left, that grant
// not among clocked, and how much.
func grantedInLease(v checker.Verdict, x checker.Violation, grantAt map[int64]history.Event, clocked map[int64]bool) (time.Duration, bool) {
	d, ok := doubleGrantOf(v, x)
	if !ok {
		return 0, false
	}
	first, ok := grantAt[d.Held.StartIndex]
	if !ok || clocked[first.Index] || first.ValidUntil == 0 || d.Second.Start >= first.ValidUntil {
		return 0, false
	}
	return time.Duration(first.ValidUntil - d.Second.Start).Round(10 * time.Microsecond), true
}

// clockedGrants are the grants (by index) whose acquire was under way while
// a client clock moved: as a jump began or ended, or at any time in a
// drift's window (it moves the clock every few milliseconds). The belief
// such a grant records is counted from its request's send on the moved
// clock: a clock running slow through a long wait makes it too long by
// most of the wait.
func clockedGrants(events []history.Event) map[int64]bool {
	type span struct{ from, to int64 } // the clock moved somewhere in [from, to]
	var moves []span
	for _, w := range history.FaultWindows(events) {
		if w.Fault != clientClock {
			continue
		}
		if w.Params["rate"] != "" {
			moves = append(moves, span{w.Start, cmp.Or(w.End, math.MaxInt64)})
			continue
		}
		at := cmp.Or(w.InPlace, w.Start)
		moves = append(moves, span{at, at})
		if w.End != 0 {
			moves = append(moves, span{w.End, w.End})
		}
	}
	out := map[int64]bool{}
	if len(moves) == 0 {
		return out
	}
	asked := map[int]int64{}
	for _, ev := range events {
		switch {
		case ev.F != history.Acquire:
		case ev.Type == history.Invoke:
			asked[ev.Proc] = ev.T
		case ev.Type == history.OK:
			for _, m := range moves {
				if m.to >= asked[ev.Proc] && m.from <= ev.T {
					out[ev.Index] = true
				}
			}
		}
	}
	return out
}

// clientClock is the fault kind that moves a client's clock.
const clientClock = "client-clock"

// primaries are the sightings a finding is made of: every class but the
// consequences of a double grant the case also showed.
func primaries(ss []Sighting) (primary, also []Sighting) {
	var classes []verdict.Outcome
	for _, s := range ss {
		classes = append(classes, s.Class)
	}
	for _, s := range ss {
		if s.Class.FollowsFrom(classes) {
			also = append(also, s)
			continue
		}
		primary = append(primary, s)
	}
	return primary, also
}

// shows reports whether a case's sightings include class c.
func shows(ss []Sighting, c verdict.Outcome) bool {
	return slices.ContainsFunc(ss, func(s Sighting) bool { return s.Class == c })
}

// fileSafe is a class as part of a file name.
func fileSafe(o verdict.Outcome) string {
	b := []byte(o)
	for i, c := range b {
		if c == ':' {
			b[i] = '-'
		}
	}
	return string(b)
}

func (s Sighting) String() string {
	return fmt.Sprintf("%s (%d)", s.Class, s.Count)
}

package verdict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
)

// Span is a stretch of the history's time (CLOCK_MONOTONIC ns), both ends
// included.
type Span struct{ Start, End int64 }

func (s Span) overlaps(o Span) bool { return s.Start <= o.End && o.Start <= s.End }

// Stall is a stretch in which the lab itself stood still: its stall probe
// in locklab, in a worker process or beside the server containers woke far
// later than it asked to (a starved machine, a stop-the-world pause, a
// SIGSTOP from outside). A pause a fault made on purpose is that fault,
// not a stall: the runner leaves it out.
type Stall struct {
	Who string // "locklab", "worker N", "containers"
	// Proc is the client whose worker process stalled (a worker's
	// stall); -1: what every client shares (locklab, the containers).
	Proc int
	Span
}

// Placed is a violation placed in time: where a stall of the lab could
// have made it (from its first event to its last, or the checker's
// window), the clients whose events those are (nil: any client), and how
// long the lab must have stood still there to have made it.
type Placed struct {
	Span
	Procs []int
	// Need is the least time stalls must cover inside Span (ns); 0: any
	// stall there may have made it.
	Need int64
}

// touches reports whether stall s may have taken part in the violation:
// it overlaps it, and stopped something its clients depend on (locklab or
// the servers, or the worker of one of them).
func (p Placed) touches(s Stall) bool {
	return s.overlaps(p.Span) && (s.Proc < 0 || p.Procs == nil || slices.Contains(p.Procs, s.Proc))
}

// madeBy reports whether stalls (those that touch p) were long enough to
// have made the violation.
func (p Placed) madeBy(stalls []Stall) bool {
	return len(stalls) > 0 && covered(stalls, p.Span) >= p.Need
}

// Decisive is what decides a case's comparison, placed in time.
type Decisive struct {
	// Violations places each violation the checker found, by outcome
	// (ViolationSpans).
	Violations map[Outcome][]Placed
	// Faults are the case's fault windows (one never healed runs to the
	// case's end): what decides an expected-safe case, or one whose
	// expected violation never showed.
	Faults []Span
	// Instant are the windows of faults over as soon as they were made (a
	// crash, a restart): whether the lock then grants twice, or comes
	// free, plays out over what follows, so each is judged over at least
	// Lease (ns: the case's TTL or session) from its start, or until the
	// holds in force when it struck (Holds) ended, if sooner: a restart
	// grants twice only while its holder still holds.
	Instant []Span
	Lease   int64
	Holds   []Span
	// Tenures are the same holds as the checker placed them, each to its
	// end (a crashed holder's at its crash), with who held which key and
	// when it was told the lock was gone (LapsedUntaken).
	Tenures []Tenure
	// AtHold are the faults that struck at a grant, aimed at its hold
	// (`when: holding`), from their start to when they took effect (an
	// instant one over, a lasting one in place): those must meet it
	// (tooLate). Those on the holder's links are in AtRelease instead.
	AtHold []Span
	// AtRelease are the faults aimed at a hold that act on the holder's
	// links (dropped or slow replies, a partition), from their start to
	// when they were in place: in place before the hold ended, one met its
	// release at least, whose late answer is what some locks break on, so
	// it is too late only once the hold had ended (no Settle).
	AtRelease []Span
	// Settle is how long before the end of the hold it struck at such a
	// fault must have taken effect to have been seen (ns): the stall
	// threshold, finer than which the lab does not judge timing (a clock
	// command through docker exec returned 6 ms before the holder's
	// release, and the key went with it, seen by no waiter).
	Settle int64
	// Run is the case, from its first event to its last; a violation
	// that cannot be placed (non-linearizable with no finer class) is
	// taken to span it.
	Run Span
}

// ViolationSpans places each violation of v in time, from its first event
// to its last, with the clients whose events they are; at gives an
// event's time and client by its index (false: unknown). The grant that
// broke mutual exclusion and the tenure it broke into, the stale write
// and the write it went behind: a lab that stood still anywhere between
// them may have made the violation itself.
func ViolationSpans(v checker.Verdict, at func(index int64) (t int64, proc int, ok bool), run Span) map[Outcome][]Placed {
	out := map[Outcome][]Placed{}
	for _, x := range v.Violations {
		p, placed := Placed{}, false
		for _, i := range x.Events {
			t, proc, ok := at(i)
			if !ok {
				continue
			}
			if !placed {
				p.Span, placed = Span{t, t}, true
			}
			p.Start, p.End = min(p.Start, t), max(p.End, t)
			if !slices.Contains(p.Procs, proc) {
				p.Procs = append(p.Procs, proc)
			}
		}
		if !placed {
			p = Placed{Span: run}
		}
		if w := x.Window; w != nil && placed {
			p.Start, p.End = min(p.Start, w.From), max(p.End, w.To)
			p.Need = w.Need
		}
		o := OutcomeOf(x.Kind)
		out[o] = append(out[o], p)
	}
	return out
}

// LabStalled judges r again knowing when the lab stalled: a case whose
// deciding events fell in a stall still reports what it saw, but its
// comparison is undecided, "inconclusive: the lab stalled", and a gate
// counts it so (never as the lock's failure, never as a pass). Deciding:
//   - a violation not expected (or forbidden): it stands when one of
//     them came clear of the stalls that could have made it. A stall could
//     when it stopped something the violation's clients depend on
//     (locklab, the containers, or the worker of one of them) and the
//     stalls there were long enough to account for what was seen (the
//     checker's Window: a holder's tenure past the second grant, the
//     overlap of two believed leases, how late a write came behind the
//     one that made it lost or stale); a 0.2 s stall cannot make a holder
//     outlive its lease by a second. When each violation was within such
//     stalls, the lab's standing still may have made them;
//   - an expected violation that showed: as above, one clear of every
//     stall must show;
//   - an expected violation that never showed: a fault window the lab
//     stood still for at least half of (as below), so that the fault met
//     a lab mostly not exercising the lock. With no fault, the whole run;
//   - an expected safe case (or one expecting blocked, a refused stale
//     write, ...): fault windows in which the lab stood still for at
//     least half their time taken together, so the faults met a lab that
//     was mostly not exercising the lock. A shorter stall leaves most of the window
//     exercised and the case decided: on a busy 2-core machine locklab
//     stalls past 100 ms a few times a minute, and a 0.15 s stall in a
//     2 s server pause made an expected-safe run undecided. Without
//     faults, an expected-safe case saw what it saw, fewer operations
//     while the lab stood still.
func LabStalled(r Result, e Expectation, d Decisive, stalls []Stall) Result {
	// Only a violation the fault was there to make: a fault over after
	// the hold it struck proves an expected-safe case nothing less (a
	// delayed restart is over after it by design).
	if r.Status == Contradicts && r.Missed {
		if w, ok := d.tooLate(); ok {
			r.Status, r.Missed, r.LabStalled = Undecided, false, true
			r.Text = fmt.Sprintf("inconclusive: the fault at %.2f s took effect only at %.2f s, when the holds it struck had ended or were about to: it never met a held lock; %s",
				seconds(w.Start-d.Run.Start), seconds(w.End-d.Run.Start), r.Text)
			return r
		}
	}
	if len(stalls) == 0 {
		return r
	}
	var during []Stall
	switch {
	case r.Status == Contradicts && !r.Missed:
		tainted, clear := d.inStalls(withGrants(r.Deciding(), r.Observed), stalls)
		if clear {
			return r
		}
		during = tainted
	case r.Status == Contradicts:
		windows := d.faultWindows()
		if len(windows) == 0 {
			windows = []Span{d.Run}
		}
		during = mostlyStalled(stalls, windows)
	case r.Status == Agrees:
		byFaults := false
		// A consequence of a double grant (a lost update, a stale write)
		// that an expected double grant clear of the stalls came with is
		// that grant's: a stall may have moved which write was lost, not
		// made two holders write at once.
		grantClear := false
		var consequences []Stall
		for _, x := range e.Outcomes {
			if !x.Unsafe() {
				byFaults = true
				continue
			}
			tainted, clear := d.inStalls(showedOf(r.Observed, x), stalls)
			switch {
			case clear:
				grantClear = grantClear || x.IsDoubleGrant()
			case x.FollowsFromDoubleGrant():
				consequences = append(consequences, tainted...)
			default:
				during = append(during, tainted...)
			}
		}
		if !grantClear {
			during = append(during, consequences...)
		}
		if byFaults {
			during = append(during, stalledTogether(stalls, d.faultWindows())...)
		}
	}
	if len(during) == 0 {
		return r
	}
	r.Status, r.Missed, r.LabStalled = Undecided, false, true
	r.Text = fmt.Sprintf("inconclusive: the lab stalled (%s) during the events that decide it; %s", describeStalls(dedupe(during), d.Run.Start), r.Text)
	return r
}

// tooLate is a fault aimed at a hold that took effect (an instant one
// over, a lasting one in place) only after every hold in force when it
// struck had ended, or less than Settle before (a server restart that
// took longer than the hold it was aimed at, a clock command that ran for
// seconds): whatever the lock does, that fault could not show it. One on
// the holder's links (AtRelease) is too late only once the holds ended:
// in place before, it met their releases.
func (d Decisive) tooLate() (Span, bool) {
	for _, at := range []struct {
		faults []Span
		settle int64
	}{{d.AtHold, d.Settle}, {d.AtRelease, 0}} {
		for _, w := range at.faults {
			if held := d.heldUntil(w.Start); held > 0 && held < w.End+at.settle {
				return w, true
			}
		}
	}
	return Span{}, false
}

// heldUntil is when the last of the holds in force at t ended (0: none).
func (d Decisive) heldUntil(t int64) int64 {
	var held int64
	for _, h := range d.Holds {
		if h.Start <= t && t <= h.End {
			held = max(held, h.End)
		}
	}
	return held
}

func seconds(ns int64) float64 { return time.Duration(ns).Seconds() }

// faultWindows are the fault windows, an instant fault's a lease long, or
// until the hold it met and outlasted ended. A hold that ended with the
// fault (a crash ends its holder's tenure) leaves the lease: the crashed
// holder's lock lives on on the server until it expires, and what the
// lock does then is what the fault was for.
func (d Decisive) faultWindows() []Span {
	out := slices.Clone(d.Faults)
	for _, w := range d.Instant {
		end := w.Start + d.Lease
		if held := d.heldUntil(w.Start); held > w.End {
			end = min(end, held)
		}
		out = append(out, Span{w.Start, max(w.End, end)})
	}
	return out
}

// inStalls reports whether some violation of the outcomes came clear of
// every stall, and otherwise the stalls they fell in.
func (d Decisive) inStalls(outcomes []Outcome, stalls []Stall) (during []Stall, clear bool) {
	for _, o := range outcomes {
		placed, ok := d.Violations[o]
		if !ok {
			placed = []Placed{{Span: d.Run}}
		}
		for _, p := range placed {
			var hit []Stall
			for _, s := range stalls {
				if p.touches(s) {
					hit = append(hit, s)
				}
			}
			if !p.madeBy(hit) {
				return nil, true
			}
			during = append(during, hit...)
		}
	}
	return during, len(during) == 0
}

// withGrants are the deciding outcomes with each consequence of a double
// grant (a lost update, a stale write) replaced by the double grants
// observed beside it: two holders' writes collide wherever they fall, so a
// stall that made the two holders made the collision, however clear of it
// the writes came. Without a double grant a consequence is judged alone.
func withGrants(deciding, observed []Outcome) []Outcome {
	grants := slices.DeleteFunc(slices.Clone(observed), func(o Outcome) bool { return !o.IsDoubleGrant() })
	if len(grants) == 0 || !slices.ContainsFunc(deciding, Outcome.FollowsFromDoubleGrant) {
		return deciding
	}
	out := slices.DeleteFunc(slices.Clone(deciding), Outcome.FollowsFromDoubleGrant)
	for _, g := range grants {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// showedOf are the observed outcomes that satisfy expected x.
func showedOf(observed []Outcome, x Outcome) []Outcome {
	var out []Outcome
	for _, o := range observed {
		if o.Satisfies(x) {
			out = append(out, o)
		}
	}
	return out
}

// overlapping are the stalls that overlap any of spans.
func overlapping(stalls []Stall, spans []Span) []Stall {
	var out []Stall
	for _, st := range stalls {
		for _, s := range spans {
			if st.overlaps(s) {
				out = append(out, st)
				break
			}
		}
	}
	return out
}

// mostlyStalled are the stalls in each window the lab stood still for at
// least half of (stalls of several probes at once counted once).
func mostlyStalled(stalls []Stall, windows []Span) []Stall {
	var out []Stall
	for _, w := range windows {
		in := overlapping(stalls, []Span{w})
		if 2*covered(in, w) >= w.End-w.Start {
			out = append(out, in...)
		}
	}
	return out
}

// stalledTogether are the stalls in windows when the lab stood still for at
// least half of their time taken together: what an expected-safe case
// rests on is every window the faults made, and one window cut short (a
// slow-replies window the case's end healed 48 ms in, under a 0.25 s
// stall of a ZooKeeper member) leaves the others exercised.
func stalledTogether(stalls []Stall, windows []Span) []Stall {
	var total, still int64
	for _, w := range union(windows) {
		total += w.End - w.Start
		still += covered(stalls, w)
	}
	if total == 0 || 2*still < total {
		return nil
	}
	return overlapping(stalls, windows)
}

// union merges spans that overlap, in time order.
func union(spans []Span) []Span {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	var out []Span
	for _, sp := range s {
		if n := len(out); n > 0 && sp.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, sp.End)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// covered is how much of w the stalls cover, overlaps counted once (ns).
func covered(stalls []Stall, w Span) int64 {
	spans := make([]Span, 0, len(stalls))
	for _, st := range stalls {
		if st.overlaps(w) {
			spans = append(spans, Span{max(st.Start, w.Start), min(st.End, w.End)})
		}
	}
	var total int64
	for _, s := range union(spans) {
		total += s.End - s.Start
	}
	return total
}

func dedupe(stalls []Stall) []Stall {
	seen := map[Stall]bool{}
	var out []Stall
	for _, s := range stalls {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// describeStalls names the first few stalls: who, for how long, when
// (seconds after origin).
func describeStalls(stalls []Stall, origin int64) string {
	const most = 3
	var parts []string
	for i, s := range stalls {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(stalls)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("%s for %.2f s at %.2f s", s.Who,
			time.Duration(s.End-s.Start).Seconds(), time.Duration(s.Start-origin).Seconds()))
	}
	return strings.Join(parts, ", ")
}

package explore

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/history"
)

// Transitions: the lock-state changes a case reached, read from its
// history. They are what steering counts: a schedule that reached one
// seen rarely is mutated more often than one that reached only the common
// ones (a grant, a release).
const (
	// ExpiryWhileHeld: a holder let go (or crashed) after its lease had run
	// out by its own clock.
	ExpiryWhileHeld = "expiry-while-held"
	// RenewalAfterExpiry: a holder asked to renew a lease that had already
	// run out by its own clock.
	RenewalAfterExpiry = "renewal-after-expiry"
	Renewed            = "renewed"
	RenewalRefused     = "renewal-refused" // answered "not held"
	RenewalUnknown     = "renewal-indeterminate"
	// ReleaseNotHeld: a release answered "not held": the lock was gone.
	ReleaseNotHeld = "release-not-held"
	ReleaseUnknown = "release-indeterminate"
	// LostSignal: the holder was told its lock was gone.
	LostSignal     = "lost-signal"
	AcquireUnknown = "acquire-indeterminate"
	// AcquireTookEffect: an indeterminate acquire that (it seems) took
	// effect: after it, the key stayed taken while others waited, though no
	// known holder had it.
	AcquireTookEffect = "indeterminate-acquire-took-effect"
	HolderCrashed     = "holder-crashed"
	// FencedWriteRefused: the fenced store refused a stale holder.
	FencedWriteRefused = "fenced-write-refused"
	// WriteAfterExpiry: a holder wrote to the store after its lease had
	// run out by its own clock.
	WriteAfterExpiry = "write-after-expiry"
	// GrantDuring is the prefix of "a grant while a fault of this kind was
	// in force" (grant-during:partition); ReleaseDuring, RenewalDuring and
	// ReentryDuring the same of a release, a renewal and a re-entry asked
	// (where release, renewal and re-entry bugs live).
	GrantDuring   = "grant-during:"
	ReleaseDuring = "release-during:"
	RenewalDuring = "renewal-during:"
	ReentryDuring = "reentry-during:"
)

// orphanGap is how long a key must stay taken after an indeterminate
// acquire, while others wait for it, for the acquire to count as having
// taken effect: far beyond a hand-off (microseconds to milliseconds).
const orphanGap = 300 * time.Millisecond

// hold is one grant being followed through a history.
type hold struct {
	start, validUntil int64
	reentries         int // re-entries granted and not yet given back
}

// transitions are the lock-state transitions events reached, sorted.
func transitions(events []history.Event) []string {
	w := transitionWalk{got: map[string]bool{}, holds: map[procKey]*hold{}, windows: history.FaultWindows(events),
		grants: map[string][]int64{}, waiting: map[string][]int64{}}
	for _, ev := range events {
		if ev.Proc >= 0 {
			w.add(ev)
		}
	}
	for _, ev := range w.unknown {
		if tookEffect(ev, w.grants[ev.Key], w.waiting[ev.Key]) {
			w.got[AcquireTookEffect] = true
			break
		}
	}
	out := make([]string, 0, len(w.got))
	for t := range w.got {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

type procKey struct {
	proc int
	key  string
}

// transitionWalk follows a history's events for transitions.
type transitionWalk struct {
	got     map[string]bool
	holds   map[procKey]*hold
	windows []history.Window
	// Grants per key and the indeterminate acquires, for the inference
	// that an indeterminate acquire took effect.
	grants  map[string][]int64
	waiting map[string][]int64 // acquire invokes per key
	unknown []history.Event
}

// during notes prefix+fault for each fault in force at t.
func (w *transitionWalk) during(prefix string, t int64) {
	for _, f := range w.windows {
		if t >= f.Start && (f.End == 0 || t <= f.End) {
			w.got[prefix+f.Fault] = true
		}
	}
}

// add follows one client event.
func (w *transitionWalk) add(ev history.Event) {
	k := procKey{ev.Proc, ev.Key}
	h := w.holds[k]
	expired := func(t int64) bool { return h != nil && h.validUntil != 0 && t > h.validUntil }
	switch {
	case ev.F == history.Acquire && ev.Type == history.Invoke:
		w.waiting[ev.Key] = append(w.waiting[ev.Key], ev.T)
		if ev.Reentry {
			w.during(ReentryDuring, ev.T)
		}
	case ev.F == history.Acquire && ev.Type == history.OK && ev.Reentry && h != nil:
		h.reentries++
		if ev.ValidUntil != 0 {
			h.validUntil = ev.ValidUntil
		}
	case ev.F == history.Acquire && ev.Type == history.OK:
		w.holds[k] = &hold{start: ev.T, validUntil: ev.ValidUntil}
		w.grants[ev.Key] = append(w.grants[ev.Key], ev.T)
		w.during(GrantDuring, ev.T)
	case ev.F == history.Acquire && ev.Type == history.Info:
		w.got[AcquireUnknown] = true
		w.unknown = append(w.unknown, ev)
	case ev.F == history.Extend && ev.Type == history.Invoke:
		if expired(ev.T) {
			w.got[RenewalAfterExpiry] = true
		}
		w.during(RenewalDuring, ev.T)
	case ev.F == history.Extend && ev.Type == history.OK:
		w.got[Renewed] = true
		if h != nil && ev.ValidUntil != 0 {
			h.validUntil = ev.ValidUntil
		}
	case ev.F == history.Extend && ev.Type == history.Fail && notHeld(ev.Error):
		w.got[RenewalRefused] = true
	case ev.F == history.Extend && ev.Type == history.Info:
		w.got[RenewalUnknown] = true
	case ev.F == history.Release && ev.Type == history.Invoke:
		w.during(ReleaseDuring, ev.T)
		if expired(ev.T) {
			w.got[ExpiryWhileHeld] = true
		}
		if h != nil && h.reentries > 0 {
			h.reentries-- // a re-entry given back: the hold goes on
			break
		}
		delete(w.holds, k)
	case ev.F == history.Release && ev.Type == history.Fail && notHeld(ev.Error):
		w.got[ReleaseNotHeld] = true
	case ev.F == history.Release && ev.Type == history.Info:
		w.got[ReleaseUnknown] = true
	case ev.F == history.Lost:
		w.got[LostSignal] = true
	case ev.F == history.Crash:
		w.crashed(ev)
	case (ev.F == history.Write || ev.F == history.Read) && ev.Type == history.Fail:
		w.got[FencedWriteRefused] = true
	case ev.F == history.Write && ev.Type == history.OK:
		for kk, hh := range w.holds {
			if kk.proc == ev.Proc && hh.validUntil != 0 && ev.T > hh.validUntil {
				w.got[WriteAfterExpiry] = true
			}
		}
	}
}

// crashed ends every hold of the crashed client.
func (w *transitionWalk) crashed(ev history.Event) {
	for kk, hh := range w.holds {
		if kk.proc == ev.Proc {
			w.got[HolderCrashed] = true
			if hh.validUntil != 0 && ev.T > hh.validUntil {
				w.got[ExpiryWhileHeld] = true
			}
			delete(w.holds, kk)
		}
	}
}

// tookEffect infers that the indeterminate acquire ev took effect: the
// next grant of its key came orphanGap or more after it, while another
// client was waiting for the key in that gap.
func tookEffect(ev history.Event, grants, waits []int64) bool {
	next := int64(-1)
	for _, g := range grants {
		if g > ev.T {
			next = g
			break
		}
	}
	if next >= 0 && next-ev.T < int64(orphanGap) {
		return false
	}
	for _, w := range waits {
		if w > ev.T && (next < 0 || w < next-int64(orphanGap)) {
			return true
		}
	}
	return false
}

// notHeld reports whether an error is the lock's "not held" answer.
func notHeld(err string) bool { return strings.Contains(err, "not held") }

// faultKinds are the fault kinds a case's nemesis events injected.
func faultKinds(events []history.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.F != history.Nemesis || ev.Type != history.OK {
			continue
		}
		var v history.NemesisValue
		if json.Unmarshal(ev.Value, &v) == nil && v.Op == history.NemesisStart && !contains(out, v.Fault) {
			out = append(out, v.Fault)
		}
	}
	return out
}

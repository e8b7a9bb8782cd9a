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
	got := map[string]bool{}
	type pk struct {
		proc int
		key  string
	}
	holds := map[pk]*hold{}
	held := func(proc int, key string) (*hold, pk) {
		k := pk{proc, key}
		return holds[k], k
	}
	windows := history.FaultWindows(events)
	// Grants per key and the indeterminate acquires, for the inference
	// that an indeterminate acquire took effect.
	grants := map[string][]int64{}
	waiting := map[string][]int64{} // acquire invokes per key
	during := func(prefix string, t int64) {
		for _, w := range windows {
			if t >= w.Start && (w.End == 0 || t <= w.End) {
				got[prefix+w.Fault] = true
			}
		}
	}
	var unknown []history.Event
	for _, ev := range events {
		if ev.Proc < 0 {
			continue
		}
		h, k := held(ev.Proc, ev.Key)
		expired := func(t int64) bool { return h != nil && h.validUntil != 0 && t > h.validUntil }
		switch {
		case ev.F == history.Acquire && ev.Type == history.Invoke:
			waiting[ev.Key] = append(waiting[ev.Key], ev.T)
			if ev.Reentry {
				during(ReentryDuring, ev.T)
			}
		case ev.F == history.Acquire && ev.Type == history.OK && ev.Reentry && h != nil:
			h.reentries++
			if ev.ValidUntil != 0 {
				h.validUntil = ev.ValidUntil
			}
		case ev.F == history.Acquire && ev.Type == history.OK:
			holds[k] = &hold{start: ev.T, validUntil: ev.ValidUntil}
			grants[ev.Key] = append(grants[ev.Key], ev.T)
			during(GrantDuring, ev.T)
		case ev.F == history.Acquire && ev.Type == history.Info:
			got[AcquireUnknown] = true
			unknown = append(unknown, ev)
		case ev.F == history.Extend && ev.Type == history.Invoke:
			if expired(ev.T) {
				got[RenewalAfterExpiry] = true
			}
			during(RenewalDuring, ev.T)
		case ev.F == history.Extend && ev.Type == history.OK:
			got[Renewed] = true
			if h != nil && ev.ValidUntil != 0 {
				h.validUntil = ev.ValidUntil
			}
		case ev.F == history.Extend && ev.Type == history.Fail && notHeld(ev.Error):
			got[RenewalRefused] = true
		case ev.F == history.Extend && ev.Type == history.Info:
			got[RenewalUnknown] = true
		case ev.F == history.Release && ev.Type == history.Invoke:
			during(ReleaseDuring, ev.T)
			if expired(ev.T) {
				got[ExpiryWhileHeld] = true
			}
			if h != nil && h.reentries > 0 {
				h.reentries-- // a re-entry given back: the hold goes on
				break
			}
			delete(holds, k)
		case ev.F == history.Release && ev.Type == history.Fail && notHeld(ev.Error):
			got[ReleaseNotHeld] = true
		case ev.F == history.Release && ev.Type == history.Info:
			got[ReleaseUnknown] = true
		case ev.F == history.Lost:
			got[LostSignal] = true
		case ev.F == history.Crash:
			for kk, hh := range holds {
				if kk.proc == ev.Proc {
					got[HolderCrashed] = true
					if hh.validUntil != 0 && ev.T > hh.validUntil {
						got[ExpiryWhileHeld] = true
					}
					delete(holds, kk)
				}
			}
		case (ev.F == history.Write || ev.F == history.Read) && ev.Type == history.Fail:
			got[FencedWriteRefused] = true
		case ev.F == history.Write && ev.Type == history.OK:
			for kk, hh := range holds {
				if kk.proc == ev.Proc && hh.validUntil != 0 && ev.T > hh.validUntil {
					got[WriteAfterExpiry] = true
				}
			}
		}
	}
	for _, ev := range unknown {
		if tookEffect(ev, grants[ev.Key], waiting[ev.Key]) {
			got[AcquireTookEffect] = true
			break
		}
	}
	out := make([]string, 0, len(got))
	for t := range got {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
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

package verdict

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
)

// Freeing is what tells a lock stuck for good from one slow to come free:
// how long after its holder is gone the approach frees it by itself, and
// the case's time scale.
type Freeing struct {
	After time.Duration // from the holder's last event; unused with Never
	Never bool          // nothing frees it (no TTL, session or disconnect)
	Scale time.Duration
}

// FreeingOf is approach a's freeing under a workload asking leases of
// ttl: by that TTL where its leases expire (or the approach's default,
// unknown here, when ttl is 0), else by its session (crash-freed-after),
// else at once on a dropped connection, else never. The scale is the TTL,
// the session or a second.
func FreeingOf(a impls.Approach, ttl time.Duration) Freeing {
	ttlLeases, session, onDisconnect := a.Caps.TTL, a.CrashFreedAfter, a.Caps.FreedOnDisconnect
	switch {
	case ttlLeases && ttl > 0:
		return Freeing{After: ttl, Scale: ttl}
	case ttlLeases:
		// The approach's own default TTL, not known here: a gone holder's
		// lock is never taken for stuck, a released one still is.
		return Freeing{After: unknownTTL, Scale: time.Second}
	case session > 0:
		return Freeing{After: session, Scale: session}
	case onDisconnect:
		return Freeing{Scale: time.Second}
	}
	return Freeing{Never: true, Scale: time.Second}
}

// unknownTTL stands for a lease whose length the workload left to the
// approach: longer than any case.
const unknownTTL = 24 * time.Hour

// unavailable marks an acquire that could not reach its servers: the
// unavailable outcome, not a waiter refused.
var unavailable = impls.ErrUnavailable.Error()

// Starvation follows a case's events, as they are recorded (in any
// order), for Starved: a key nobody was granted though clients asked for
// it, from well after it should have been free to the end of the case.
// It keeps a few numbers per key and per process, not the events.
type Starvation struct {
	keys  map[string]*keyWait
	order []string
	procs map[int]*procEnd
	// started and stopped are the faults' injections, by id: one started
	// and not stopped is in force.
	started, stopped map[int64]bool
	over             int64 // when the last fault ended
	end              int64
	// stalls are when the lab or a server stood still: nobody is granted
	// anything then, whatever the lock.
	stalls [][2]int64
}

type keyWait struct {
	grantT    int64 // the last grant
	grantProc int
	lastAsk   int64 // the last acquire of the key refused, or answered unknown
	byProc    map[int]*procKey
}

// procKey is one process's last acquire and release of a key.
type procKey struct {
	invoked, answered int64 // its last acquire's invoke, its last answer
	released          int64 // its last release's answer
	releasedOK        bool
}

type procEnd struct {
	last    int64
	retired bool // its last operation ended indeterminate
	asking  bool // its last event asked for a lock: it waits, or was killed asking
}

// Add follows one event.
func (s *Starvation) Add(ev history.Event) {
	if s.keys == nil {
		s.keys, s.procs = map[string]*keyWait{}, map[int]*procEnd{}
		s.started, s.stopped = map[int64]bool{}, map[int64]bool{}
	}
	if _, start, end, ok := history.ReadStall(ev); ok {
		s.stalls = append(s.stalls, [2]int64{start, end})
		return
	}
	if ev.F == history.Nemesis {
		var v history.NemesisValue
		if ev.Type == history.Invoke || json.Unmarshal(ev.Value, &v) != nil {
			return
		}
		switch {
		case v.Op == history.NemesisStart && ev.Type == history.OK:
			s.started[v.ID] = true
		case v.Op == history.NemesisStop:
			s.stopped[v.ID] = true
			s.over = max(s.over, ev.T)
		}
		return
	}
	if ev.Proc < 0 {
		return
	}
	// The run ends with its clients' last event: a fault's late report
	// (a target sought past the workload's end) asks for no lock.
	s.end = max(s.end, ev.T)
	p := s.procs[ev.Proc]
	if p == nil {
		p = &procEnd{}
		s.procs[ev.Proc] = p
	}
	if ev.T >= p.last {
		p.last = ev.T
		p.retired = ev.Type == history.Info
		p.asking = ev.Type == history.Invoke && ev.F == history.Acquire
	}
	if ev.Key == "" {
		return
	}
	k := s.keys[ev.Key]
	if k == nil {
		k = &keyWait{byProc: map[int]*procKey{}}
		s.keys[ev.Key] = k
		s.order = append(s.order, ev.Key)
	}
	pk := k.byProc[ev.Proc]
	if pk == nil {
		pk = &procKey{}
		k.byProc[ev.Proc] = pk
	}
	switch {
	case ev.F == history.Acquire && ev.Type == history.Invoke:
		pk.invoked = max(pk.invoked, ev.T)
	case ev.F == history.Acquire:
		pk.answered = max(pk.answered, ev.T)
		switch {
		case ev.Type != history.OK && !strings.Contains(ev.Error, unavailable):
			k.lastAsk = max(k.lastAsk, ev.T)
		case ev.Type == history.OK && ev.T >= k.grantT:
			k.grantT, k.grantProc = ev.T, ev.Proc
		}
	case ev.F == history.Release && ev.Type != history.Invoke && ev.T >= pk.released:
		pk.released, pk.releasedOK = ev.T, ev.Type == history.OK
	}
}

// Starved reports a key nobody was granted though clients asked for it,
// from well after it should have been free to the end of the case: after
// every fault was over, after its last holder released it (answered ok)
// or, gone without a release, after f.After (at once where nothing frees
// it: its going is the stuck moment), and as long after each client that
// retired before then (its last operation indeterminate: whatever it
// held, an acquire that took effect or a queue's node, is a gone holder's)
// or last asked for a lock before then (a waiter still waiting, or a
// client killed mid-acquire, which the history cannot tell apart);
// and after every stall of the lab or a server (nobody is granted anything
// while they stand still); plus half a time scale of margin (waiters
// polling, the server's expiry), for a window of at least half a scale. It says which key and why.
func (s *Starvation) Starved(f Freeing) (string, bool) {
	for id := range s.started {
		if !s.stopped[id] {
			return "", false // a fault in force to the end: blocked by design
		}
	}
	margin := int64(f.Scale / 2)
	for _, key := range s.order {
		k := s.keys[key]
		if k.grantT == 0 {
			continue // never granted: unavailable, not blocked
		}
		holder, held := s.procs[k.grantProc], k.byProc[k.grantProc]
		free, how := holder.last, ""
		switch {
		case held.released > k.grantT && held.releasedOK:
			free, how = held.released, fmt.Sprintf("its last holder (process %d) released it", k.grantProc)
		case f.Never:
			how = fmt.Sprintf("its last holder (process %d) was gone without a release, and nothing expires it", k.grantProc)
		default:
			// Servers down count no session or lease time: a gone
			// holder's session expires a session after they are back.
			free = max(free, s.over) + int64(f.After)
			how = fmt.Sprintf("its last holder (process %d) was gone without a release %v before", k.grantProc, f.After)
		}
		from := max(free, s.over) + margin
		for changed := true; changed; {
			changed = false
			for _, st := range s.stalls {
				if st[1]+margin > from {
					from, changed = st[1]+margin, true
				}
			}
			for _, p := range s.procs {
				// A client that retired, or whose last event asked for a
				// lock (a waiter, or one killed mid-acquire, whose acquire
				// may have taken effect), may hold what a gone holder does.
				if (p.retired || p.asking) && p.last < from {
					if f.Never {
						continue
					}
					if gone := max(p.last, s.over) + int64(f.After) + margin; gone > from {
						from, changed = gone, true
					}
				}
			}
		}
		if s.end-from < margin || k.grantT >= from {
			continue
		}
		// A waiter still waiting at the end, for half a scale at least:
		// its last event is that acquire's invoke (one killed while it
		// waited is gone, not waiting).
		waiting := false
		for proc, pk := range k.byProc {
			p := s.procs[proc]
			waiting = waiting || p.asking && p.last == pk.invoked && pk.invoked > pk.answered && pk.invoked < s.end-margin
		}
		if k.lastAsk < from && !waiting {
			continue
		}
		return fmt.Sprintf("nobody was granted %s in the last %v of the run, though clients asked for it; before that %s, the faults were over, and half a time scale (%v) passed",
			key, time.Duration(s.end-from).Round(10*time.Millisecond), how, f.Scale/2), true
	}
	return "", false
}

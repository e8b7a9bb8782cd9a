// Package checker judges histories. It knows nothing of any server: a
// history file alone is enough to reach a verdict.
package checker

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/history"
)

// Open marks an interval whose holder never released (crashed or still held
// when the history ended): it extends to the end of time.
const Open = math.MaxInt64

// Interval is one holder's tenure: [acquire ok, release invoke].
type Interval struct {
	Key        string
	Proc       int
	Start, End int64 // CLOCK_MONOTONIC ns; End == Open if never released
	StartIndex int64 // index of the acquire ok event
	EndIndex   int64 // index of the release invoke event, -1 if open
	// ValidUntil is the holder's latest belief about its lease expiry
	// (monotonic ns): as recorded at the grant, updated by renewals and by
	// the belief it recorded when it let go. 0 = none.
	ValidUntil int64
	Token      *uint64
	// Learned is when the holder was told the lock was no longer its own
	// (its release or extend answered "not held", or a Lost signal): the
	// lock was taken away, not given back. 0 = never told.
	Learned int64
}

// Kinds of double grant.
const (
	// BothValid: the second grant came while the first holder's lease was
	// still valid (or it had none): the lock service broke mutual exclusion.
	BothValid = "both leases valid"
	// OutlivedLease: the first holder went on past its own lease expiry
	// (a pause, a slow request): the service was entitled to grant again;
	// only fencing saves the resource.
	OutlivedLease = "holder outlived its lease"
)

// DoubleGrant is two holders at once on one key.
type DoubleGrant struct {
	Key    string
	Kind   string   // BothValid or OutlivedLease
	Held   Interval // the earlier holder
	Second Interval // the holder granted while Held was still held
}

// Class is the violation class of the double grant.
func (d DoubleGrant) Class() Class {
	if d.Kind == OutlivedLease {
		return DoubleGrantOutlived
	}
	return DoubleGrantBothValid
}

// Describe says what happened in words, with times relative to origin.
func (d DoubleGrant) Describe(origin int64) string {
	rel := func(t int64) string { return fmt.Sprintf("%.6f s", time.Duration(t-origin).Seconds()) }
	released := "never released it"
	if d.Held.End != Open {
		released = "released at " + rel(d.Held.End)
	}
	lease := ""
	if d.Held.ValidUntil != 0 {
		lease = fmt.Sprintf("; its lease ran to %s", rel(d.Held.ValidUntil))
	}
	return fmt.Sprintf("client %d acquired %s at %s while client %d held it since %s and %s%s: %s (events %d, %d)",
		d.Second.Proc, d.Key, rel(d.Second.Start), d.Held.Proc, rel(d.Held.Start), released, lease, d.Kind,
		d.Second.StartIndex, d.Held.StartIndex)
}

type procKey struct {
	proc int
	key  string
}

// Mutex collects holder intervals from a stream of events and finds double
// grants. Only acquires that returned ok count as grants: a failed acquire
// did not happen, and an indeterminate one proves nothing on its own.
type Mutex struct {
	open      map[procKey]Interval
	intervals map[string][]Interval
	// closed is where each process's last closed interval on a key sits in
	// intervals, for a release whose answer ("not held") comes after.
	closed map[procKey]int
	// infoAcquire: an acquire whose outcome is unknown; if the process
	// later releases the key, the acquire took effect (Knossos: it may
	// take effect at any time after its invocation, or never).
	infoAcquire map[procKey]bool
	// unheld: a release invoked by a process that holds nothing there.
	unheld map[procKey]int64 // -> the release's event index
	// pointRelease: a release by a process whose acquire was
	// indeterminate. Its tenure is as short as the model allows: one
	// instant inside the release, which must find the lock free of every
	// other holder's certain span (see pointFits).
	pointRelease map[procKey]pointRel
	// pointChecks are decided once the whole history is in (Phantoms):
	// events of different processes may arrive a little out of time
	// order, and every other holder's span must be known.
	pointChecks []pointCheck
	phantoms    []Phantom
	origin      int64
	seen        bool
}

// Phantom is a release that succeeded for a process that did not hold the
// lock: no order of events allows it.
type Phantom struct {
	Key        string
	Proc       int
	T          int64
	Index      int64 // of the release's ok
	InvokeIdx  int64
	LastHolder int // the process that held the key before, -1 if none
}

// NewMutex returns an empty checker.
func NewMutex() *Mutex {
	return &Mutex{open: map[procKey]Interval{}, intervals: map[string][]Interval{}, closed: map[procKey]int{},
		infoAcquire: map[procKey]bool{}, unheld: map[procKey]int64{}, pointRelease: map[procKey]pointRel{}}
}

type pointRel struct {
	t     int64 // the release's invocation
	index int64
}

type pointCheck struct {
	pk           procKey
	rel          pointRel
	okT, okIndex int64
}

// Add feeds one event, in history order.
func (m *Mutex) Add(ev history.Event) {
	if !m.seen || ev.T < m.origin {
		m.origin, m.seen = ev.T, true
	}
	pk := procKey{ev.Proc, ev.Key}
	switch {
	case ev.F == history.Crash:
		// A crashed holder does nothing more: its tenure ends here, and
		// the server may give the lock to someone else later. What it
		// had in flight stays indeterminate.
		for opk := range m.pointRelease {
			if opk.proc == ev.Proc {
				delete(m.pointRelease, opk)
			}
		}
		for opk := range m.infoAcquire {
			if opk.proc == ev.Proc {
				delete(m.infoAcquire, opk)
			}
		}
		for opk, iv := range m.open {
			if opk.proc == ev.Proc {
				delete(m.open, opk)
				iv.End, iv.EndIndex = ev.T, ev.Index
				m.closeInterval(opk, iv)
			}
		}
	case ev.F == history.Acquire && ev.Type == history.OK:
		delete(m.infoAcquire, pk)
		if _, held := m.open[pk]; held {
			return // re-entry by the holder: the tenure goes on
		}
		m.open[pk] = Interval{Key: ev.Key, Proc: ev.Proc, Start: ev.T, End: Open, StartIndex: ev.Index, EndIndex: -1,
			ValidUntil: ev.ValidUntil, Token: ev.Token}
	case ev.F == history.Acquire && ev.Type == history.Info:
		m.infoAcquire[pk] = true
	case ev.F == history.Extend && ev.Type == history.OK:
		if iv, held := m.open[pk]; held && ev.ValidUntil != 0 {
			iv.ValidUntil = ev.ValidUntil
			m.open[pk] = iv
		}
	case (ev.F == history.Extend && ev.Type == history.Fail && strings.Contains(ev.Error, "not held")) || ev.F == history.Lost:
		if iv, held := m.open[pk]; held && iv.Learned == 0 {
			iv.Learned = ev.T
			m.open[pk] = iv
		}
	case ev.F == history.Release && ev.Type == history.Fail:
		delete(m.unheld, pk)
		if _, ok := m.pointRelease[pk]; ok {
			// The acquire it followed never took effect, it seems; its
			// earlier tenure has nothing to learn from this.
			delete(m.pointRelease, pk)
			return
		}
		// Told the lock was no longer its own: it was taken away.
		if i, ok := m.closed[pk]; ok && m.intervals[ev.Key][i].Learned == 0 {
			m.intervals[ev.Key][i].Learned = ev.T
		}
	case ev.F == history.Release && ev.Type == history.Info:
		delete(m.pointRelease, pk) // it may not have taken effect
	case ev.F == history.Release && ev.Type == history.OK:
		if p, ok := m.pointRelease[pk]; ok {
			delete(m.pointRelease, pk)
			m.pointChecks = append(m.pointChecks, pointCheck{pk: pk, rel: p, okT: ev.T, okIndex: ev.Index})
		}
		if idx, ok := m.unheld[pk]; ok {
			delete(m.unheld, pk)
			m.phantoms = append(m.phantoms, Phantom{Key: ev.Key, Proc: ev.Proc, T: ev.T, Index: ev.Index, InvokeIdx: idx,
				LastHolder: m.lastHolder(ev.Key, ev.Proc)})
		}
	case ev.F == history.Release && ev.Type == history.Invoke:
		iv, held := m.open[pk]
		if !held {
			if m.infoAcquire[pk] {
				// Its indeterminate acquire took effect after all; a
				// tenure as short as the model allows, inside this
				// release, which its answer settles.
				delete(m.infoAcquire, pk)
				m.pointRelease[pk] = pointRel{t: ev.T, index: ev.Index}
				return
			}
			m.unheld[pk] = ev.Index
			return
		}
		if ev.ValidUntil != 0 {
			iv.ValidUntil = ev.ValidUntil // its belief as it lets go
		}
		delete(m.open, pk)
		iv.End, iv.EndIndex = ev.T, ev.Index
		m.closeInterval(pk, iv)
	}
}

// settlePoints decides every point release answered so far, against the
// spans known now; Phantoms calls it once the whole history is in.
func (m *Mutex) settlePoints() {
	if len(m.pointChecks) == 0 {
		return
	}
	byKey := map[string][]pointCheck{}
	for _, c := range m.pointChecks {
		byKey[c.pk.key] = append(byKey[c.pk.key], c)
	}
	m.pointChecks = nil
	for key, checks := range byKey {
		busy := m.busySpans(key)
		for _, c := range checks {
			if !pointFits(busy, c.rel.t, c.okT) {
				m.phantoms = append(m.phantoms, Phantom{Key: key, Proc: c.pk.proc, T: c.okT, Index: c.okIndex, InvokeIdx: c.rel.index,
					LastHolder: m.lastHolder(key, c.pk.proc)})
			}
		}
	}
	sort.SliceStable(m.phantoms, func(i, j int) bool { return m.phantoms[i].T < m.phantoms[j].T })
}

// busySpans merges every certain span on key ([acquire ok, release
// invoke], open ones to the end of time) into disjoint spans sorted by
// start. Spans that only touch stay apart: instants that tie may be ordered
// either way, so a one-instant tenure fits between them. The releasing
// process's own spans can be in the union: they all ended before its
// indeterminate acquire was invoked.
func (m *Mutex) busySpans(key string) [][2]int64 {
	var spans [][2]int64
	for _, iv := range m.intervals[key] {
		spans = append(spans, [2]int64{iv.Start, iv.End})
	}
	for pk, iv := range m.open {
		if pk.key == key {
			spans = append(spans, [2]int64{iv.Start, iv.End})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var merged [][2]int64
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp[0] < merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// pointFits reports whether some instant in [from, to] is free of the busy
// spans: not so when one span starts before from and ends after to.
func pointFits(busy [][2]int64, from, to int64) bool {
	i := sort.Search(len(busy), func(i int) bool { return busy[i][0] >= from }) - 1
	return i < 0 || busy[i][1] <= to
}

func (m *Mutex) closeInterval(pk procKey, iv Interval) {
	m.closed[pk] = len(m.intervals[iv.Key])
	m.intervals[iv.Key] = append(m.intervals[iv.Key], iv)
}

// lastHolder is the process whose tenure on key started last, other than
// proc (-1 if none): who a phantom release took the lock from.
func (m *Mutex) lastHolder(key string, proc int) int {
	best, who := int64(math.MinInt64), -1
	for _, iv := range m.intervals[key] {
		if iv.Proc != proc && iv.Start > best {
			best, who = iv.Start, iv.Proc
		}
	}
	for _, iv := range m.open {
		if iv.Key == key && iv.Proc != proc && iv.Start > best {
			best, who = iv.Start, iv.Proc
		}
	}
	return who
}

// Phantoms are the releases that succeeded without their process holding
// the lock.
func (m *Mutex) Phantoms() []Phantom {
	m.settlePoints()
	return append([]Phantom(nil), m.phantoms...)
}

// Keys lists the keys that had a holder.
func (m *Mutex) Keys() []string {
	seen := map[string]bool{}
	for k := range m.intervals {
		seen[k] = true
	}
	for pk := range m.open {
		seen[pk.key] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	return out
}

// Origin is the earliest event time seen, for relative times in reports.
func (m *Mutex) Origin() int64 { return m.origin }

// Intervals returns every holder interval, open ones included, per key.
func (m *Mutex) Intervals() map[string][]Interval {
	out := make(map[string][]Interval, len(m.intervals))
	for k, ivs := range m.intervals {
		out[k] = append([]Interval(nil), ivs...)
	}
	for _, iv := range m.open {
		out[iv.Key] = append(out[iv.Key], iv)
	}
	return out
}

// sortedIntervals returns the keys in order and each key's intervals in
// grant order.
func (m *Mutex) sortedIntervals() ([]string, map[string][]Interval) {
	all := m.Intervals()
	keys := make([]string, 0, len(all))
	for k, ivs := range all {
		keys = append(keys, k)
		sort.Slice(ivs, func(i, j int) bool {
			if ivs[i].Start != ivs[j].Start {
				return ivs[i].Start < ivs[j].Start
			}
			return ivs[i].StartIndex < ivs[j].StartIndex
		})
	}
	sort.Strings(keys)
	return keys, all
}

// DoubleGrants returns every interval that began while an earlier holder's
// interval on the same key had not yet ended, sorted by key and time.
func (m *Mutex) DoubleGrants() []DoubleGrant {
	var out []DoubleGrant
	keys, all := m.sortedIntervals()
	for _, k := range keys {
		ivs := all[k]
		// Sweep: reach is the interval that extends furthest so far.
		var reach Interval
		for i, iv := range ivs {
			if i > 0 && iv.Start < reach.End {
				kind := BothValid
				if reach.ValidUntil != 0 && iv.Start >= reach.ValidUntil {
					kind = OutlivedLease
				}
				out = append(out, DoubleGrant{Key: k, Kind: kind, Held: reach, Second: iv})
			}
			if i == 0 || iv.End > reach.End {
				reach = iv
			}
		}
	}
	return out
}

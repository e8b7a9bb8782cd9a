// Package checker judges histories. It knows nothing of any backend: a
// history file alone is enough to reach a verdict.
package checker

import (
	"fmt"
	"math"
	"sort"
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
	ValidUntil int64 // the holder's believed lease expiry (monotonic ns); 0 = none
	Token      *uint64
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
	origin    int64
	seen      bool
}

// NewMutex returns an empty checker.
func NewMutex() *Mutex {
	return &Mutex{open: map[procKey]Interval{}, intervals: map[string][]Interval{}}
}

// Add feeds one event, in history order.
func (m *Mutex) Add(ev history.Event) {
	if !m.seen || ev.T < m.origin {
		m.origin, m.seen = ev.T, true
	}
	pk := procKey{ev.Proc, ev.Key}
	switch {
	case ev.F == history.Acquire && ev.Type == history.OK:
		if _, held := m.open[pk]; held {
			return // re-entry by the holder: the tenure goes on
		}
		m.open[pk] = Interval{Key: ev.Key, Proc: ev.Proc, Start: ev.T, End: Open, StartIndex: ev.Index, EndIndex: -1,
			ValidUntil: ev.ValidUntil, Token: ev.Token}
	case ev.F == history.Release && ev.Type == history.Invoke:
		iv, held := m.open[pk]
		if !held {
			return
		}
		delete(m.open, pk)
		iv.End, iv.EndIndex = ev.T, ev.Index
		m.intervals[ev.Key] = append(m.intervals[ev.Key], iv)
	}
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

package checker

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/history"
)

// RenewedAfterRelease is an extend that succeeded after its process had
// released the key (a watchdog that outlived the release).
const RenewedAfterRelease Class = "renewed after release"

// Renewals finds extends that succeeded after their process had released
// the key, before it acquired it again: a renewal that outlived its
// release (Redisson issue 7272: a watchdog armed after the unlock renewed
// an orphan key for ever). Only an extend invoked after the release's ok
// counts: one in flight while the release was sent may have landed first.
type Renewals struct {
	released   map[procKey]int64 // the release ok's index, until the process acquires again
	afterIndex map[procKey]int64 // an extend invoked since: its index
	violations []Violation
	origin     int64
	seen       bool
}

// NewRenewals returns an empty check.
func NewRenewals() *Renewals {
	return &Renewals{released: map[procKey]int64{}, afterIndex: map[procKey]int64{}}
}

// Add feeds one event, in history order.
func (r *Renewals) Add(ev history.Event) {
	if !r.seen || ev.T < r.origin {
		r.origin, r.seen = ev.T, true
	}
	pk := procKey{ev.Proc, ev.Key}
	switch {
	case ev.F == history.Crash:
		for k := range r.released {
			if k.proc == ev.Proc {
				delete(r.released, k)
				delete(r.afterIndex, k)
			}
		}
	case ev.F == history.Acquire:
		// A new acquire: what follows may be its lease's.
		delete(r.released, pk)
		delete(r.afterIndex, pk)
	case ev.F == history.Release && ev.Type == history.OK:
		r.released[pk] = ev.Index
	case ev.F == history.Extend && ev.Type == history.Invoke:
		if _, ok := r.released[pk]; ok {
			r.afterIndex[pk] = ev.Index
		}
	case ev.F == history.Extend && ev.Type == history.OK:
		inv, ok := r.afterIndex[pk]
		if !ok {
			return
		}
		delete(r.afterIndex, pk)
		rel := r.released[pk]
		r.violations = append(r.violations, Violation{Kind: RenewedAfterRelease, Key: ev.Key, Events: []int64{rel, inv, ev.Index},
			Text: fmt.Sprintf("client %d renewed %s at %.6f s after it had released it (events %d, %d): a renewal that outlived its release keeps the key alive with no holder",
				ev.Proc, ev.Key, time.Duration(ev.T-r.origin).Seconds(), rel, ev.Index)})
	case ev.F == history.Extend:
		delete(r.afterIndex, pk) // failed or unknown: nothing renewed for certain
	}
}

func (r *Renewals) classes() []Class { return []Class{RenewedAfterRelease} }

// found are the renewals after release found so far.
func (r *Renewals) found(sweep) []Violation { return append([]Violation(nil), r.violations...) }

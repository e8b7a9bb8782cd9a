package checker

import (
	"fmt"
	"time"
)

// The classes of violation of the double grants check.
const (
	// DoubleGrantBothValid: the second grant came while the first holder's
	// lease was still valid.
	DoubleGrantBothValid Class = "double grant: " + BothValid
	// DoubleGrantHeldAtOnce: the second grant came while the first holder
	// held the lock, and neither recorded a lease (a plain mutex's
	// history): the service broke mutual exclusion, as with both leases
	// valid, with no lease to speak of.
	DoubleGrantHeldAtOnce Class = "double grant: " + HeldAtOnce
	// DoubleGrantOutlived: the first holder went on past its own lease.
	DoubleGrantOutlived Class = "double grant: " + OutlivedLease
	// DoubleGrantNeverReleased (mutex model): the second grant came after
	// the first holder's release failed or it crashed, or went to the
	// holder itself: nothing had freed the lock.
	DoubleGrantNeverReleased Class = "double grant: " + NeverReleased
	// Revoked is a lock taken away from its holder: another client was
	// granted it while the holder still held it, and the holder was told
	// (its release or extend answered "not held", or a Lost signal).
	Revoked Class = "revoked"
	// PhantomRelease is a release that succeeded for a process that did
	// not hold the lock (the phantom releases check).
	PhantomRelease Class = "phantom release"
)

// doubleGrants describes the mutex check's double grants, each followed,
// the first time its holder was told, by the lock taken away from it.
type doubleGrants struct{}

func (doubleGrants) classes() []Class {
	return []Class{DoubleGrantBothValid, DoubleGrantHeldAtOnce, DoubleGrantOutlived, DoubleGrantNeverReleased, Revoked}
}

func (doubleGrants) found(s sweep) []Violation {
	var out []Violation
	revoked := map[int64]bool{}
	rel := func(t int64) string { return fmt.Sprintf("%.6f s", time.Duration(t-s.origin).Seconds()) }
	for _, d := range s.grants {
		out = append(out, Violation{Kind: d.Class(), Key: d.Key, Events: d.Events(), Text: d.Describe(s.origin), Window: d.window(), Mechanism: d.Mechanism})
		// A holder that never released says how it learned in the double
		// grant's own words.
		if d.Kind != NeverReleased && d.Held.Learned != 0 && !revoked[d.Held.StartIndex] {
			revoked[d.Held.StartIndex] = true
			out = append(out, Violation{Kind: Revoked, Key: d.Key, Events: []int64{d.Held.StartIndex, d.Second.StartIndex},
				Text: fmt.Sprintf("client %d's hold on %s was taken away: client %d was granted it at %s while client %d held it since %s; client %d was told at %s (not held, or its lock was lost)",
					d.Held.Proc, lockName(d.Key), d.Second.Proc, rel(d.Second.Start), d.Held.Proc, rel(d.Held.Start), d.Held.Proc, rel(d.Held.Learned)),
				Window: d.window()})
		}
	}
	return out
}

// phantoms describes the mutex check's phantom releases.
type phantoms struct{}

func (phantoms) classes() []Class { return []Class{PhantomRelease} }

func (phantoms) found(s sweep) []Violation {
	var out []Violation
	for _, p := range s.phantoms {
		from := "nobody held it"
		if p.LastHolder >= 0 {
			from = fmt.Sprintf("the last holder was client %d", p.LastHolder)
		}
		out = append(out, Violation{Kind: PhantomRelease, Key: p.Key, Events: []int64{p.InvokeIdx, p.Index},
			Text: fmt.Sprintf("client %d's release of %s succeeded at %.6f s although it did not hold the lock (%s)",
				p.Proc, lockName(p.Key), time.Duration(p.T-s.origin).Seconds(), from)})
	}
	return out
}

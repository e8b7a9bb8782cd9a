package checker

import (
	"fmt"
	"time"
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
		out = append(out, Violation{Kind: d.Class(), Key: d.Key, Events: d.Events(), Text: d.Describe(s.origin), Window: d.window()})
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

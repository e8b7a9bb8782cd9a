package checker

import (
	"context"
	"time"

	"github.com/locklab/locklab/history"
)

// Checker runs every check over one stream of events.
type Checker struct {
	mutex     *Mutex
	resources *Resources // also among checks: the verdict reads its keys and refusals
	checks    []check
	linear    *Linear
	events    int
}

// New returns a checker judging under model; linear=false skips the
// linearizability check (which keeps every operation in memory).
func New(model Model, linear bool) *Checker {
	c := &Checker{mutex: NewMutex(model), resources: NewResources()}
	c.checks = newChecks(c.resources)
	if linear {
		c.linear = NewLinear(model)
	}
	return c
}

// Add feeds one event, in history order.
func (c *Checker) Add(ev history.Event) {
	c.events++
	c.mutex.Add(ev)
	for _, ch := range c.checks {
		if r, ok := ch.(eventReader); ok {
			r.Add(ev)
		}
	}
	if c.linear != nil {
		c.linear.Add(ev)
	}
}

// Intervals are the holder intervals seen, per key.
func (c *Checker) Intervals() map[string][]Interval { return c.mutex.Intervals() }

// Verdict is everything the checks found.
type Verdict struct {
	// Model is what the history was judged against.
	Model         Model         `json:"model"`
	Events        int           `json:"events"`
	Keys          int           `json:"keys"`
	Origin        int64         `json:"origin_ns"`
	DoubleGrants  []DoubleGrant `json:"-"`
	Phantoms      []Phantom     `json:"-"`
	Violations    []Violation   `json:"violations"` // double grants described, then revocations, phantom releases, resource and token anomalies
	RefusedWrites int           `json:"refused_stale_requests"`
	// Classes counts the violations by class.
	Classes map[Class]int `json:"classes"`
	// Anomalies are reported but are no violations: under the lease model,
	// releases answered "not held" (RevokedInRelease).
	Anomalies []Violation `json:"anomalies,omitempty"`
	// LockLoss is how soon holders were told that their lock was gone.
	LockLoss LockLoss    `json:"lock_loss"`
	Linear   []KeyResult `json:"linearizability,omitempty"`
	// Linearizable: LinYes, LinNo or LinSkipped. The mutex check is exact
	// on every history (see Mutex): it never comes back undecided.
	Linearizable LinStatus `json:"linearizable"`
}

// Safe reports no violation and no non-linearizable key: the one rule
// for "safe", over a verdict or over the counts results keep of it.
func (v Verdict) Safe() bool { return Safe(len(v.Violations), v.Linearizable) }

// Safe is Verdict.Safe over what a case's results keep of its verdict:
// how many violations, and the linearizability status.
func Safe(violations int, lin LinStatus) bool { return violations == 0 && lin != LinNo }

// Options tune Verdict.
type Options struct {
	TimeLimit time.Duration // for porcupine's visualization of a failing key; default 10s
	HTMLDir   string        // where to write visualizations of failing keys
}

// Verdict runs the checks over what was added.
//
// Linearizability of the owner-aware mutex is decided exactly by the mutex
// check, in one sweep per key: a failed operation never happened; an
// indeterminate acquire may take effect after its invocation or never, and
// "never" is the most permissive choice unless its process later releases
// the key; an indeterminate release may take effect at its invocation, the
// most permissive choice. The model says what else ends a tenure: under
// the lease model a failed release ends it at its invocation and a crash
// at the crash; under the mutex model nothing does. Every tenure then
// certainly covers [acquire returned, release invoked] (the release that
// ends it), so disjoint tenures must be ordered by those spans, and a
// greedy placement succeeds exactly when no two spans overlap: the history
// is linearizable iff there is no double grant (under the mutex model, a
// grant to the holder itself is one) and no phantom release. porcupine
// only draws the failing keys.
func (c *Checker) Verdict(ctx context.Context, opt Options) (Verdict, error) {
	if opt.TimeLimit == 0 {
		opt.TimeLimit = 10 * time.Second
	}
	v, keys := c.judge()
	if c.linear != nil {
		failing := map[string]int64{} // key -> when its first violation came
		first := func(k string, t int64) {
			if f, ok := failing[k]; !ok || t < f {
				failing[k] = t
			}
		}
		for _, d := range v.DoubleGrants {
			first(d.Key, d.Second.Start)
		}
		for _, p := range v.Phantoms {
			first(p.Key, p.T)
		}
		for k := range c.linear.ops {
			keys[k] = true
		}
		v.Linearizable = LinYes
		if len(failing) > 0 {
			v.Linearizable = LinNo
		}
		res, err := c.linear.Visualize(ctx, failing, opt.TimeLimit, opt.HTMLDir)
		if err != nil {
			return v, err
		}
		v.Linear = res
	}
	v.Keys = len(keys)
	return v, nil
}

// Snapshot is the verdict on what was added so far, without the
// linearizability check's drawings (Linearizable is LinSkipped): cheap
// enough to ask while a run goes on, as a runner does to end a case once
// it showed what it was expected to. Events still on their way (a worker's
// line not yet read) can make a violation show here that the whole history
// does not have: only Verdict decides.
func (c *Checker) Snapshot() Verdict {
	v, keys := c.judge()
	v.Keys = len(keys)
	return v
}

// judge runs every check but the linearizability drawings, returning the
// verdict and the keys seen.
func (c *Checker) judge() (Verdict, map[string]bool) {
	v := Verdict{Model: c.mutex.Model(), Events: c.events, Origin: c.mutex.Origin(), Linearizable: LinSkipped, Classes: map[Class]int{}}
	keys := map[string]bool{}
	for _, k := range c.mutex.Keys() {
		keys[k] = true
	}
	for k := range c.resources.current {
		keys[k] = true
	}
	ts := c.mutex.sortedIntervals()
	s := sweep{origin: v.Origin, tenures: ts, grants: c.mutex.doubleGrants(ts), phantoms: c.mutex.Phantoms()}
	v.DoubleGrants, v.Phantoms = s.grants, s.phantoms
	for _, ch := range c.checks {
		v.Violations = append(v.Violations, ch.found(s)...)
	}
	v.RefusedWrites = c.resources.Refused
	for _, x := range v.Violations {
		v.Classes[x.Kind]++
	}
	if v.Model == ModelLease {
		v.Anomalies = revokedInRelease(ts, v.Origin)
	}
	v.LockLoss = lockLoss(ts)
	return v, keys
}

package checker

import (
	"context"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/history"
)

// Checker runs every check over one stream of events.
type Checker struct {
	mutex     *Mutex
	resources *Resources
	linear    *Linear
	events    int
}

// New returns a checker; linear=false skips the linearizability check
// (which keeps every operation in memory).
func New(linear bool) *Checker {
	c := &Checker{mutex: NewMutex(), resources: NewResources()}
	if linear {
		c.linear = NewLinear()
	}
	return c
}

// Add feeds one event, in history order.
func (c *Checker) Add(ev history.Event) {
	c.events++
	c.mutex.Add(ev)
	c.resources.Add(ev)
	if c.linear != nil {
		c.linear.Add(ev)
	}
}

// Intervals are the holder intervals seen, per key.
func (c *Checker) Intervals() map[string][]Interval { return c.mutex.Intervals() }

// Verdict is everything the checks found.
type Verdict struct {
	Events        int           `json:"events"`
	Keys          int           `json:"keys"`
	Origin        int64         `json:"origin_ns"`
	DoubleGrants  []DoubleGrant `json:"-"`
	Violations    []Violation   `json:"violations"` // double grants described, then resource and token anomalies
	RefusedWrites int           `json:"refused_stale_requests"`
	Linear        []KeyResult   `json:"linearizability,omitempty"`
	// Linearizable: "yes", "no", "unknown" (a time limit was hit) or
	// "skipped".
	Linearizable string `json:"linearizable"`
}

// Safe reports no violation and no non-linearizable key.
func (v Verdict) Safe() bool { return len(v.Violations) == 0 && v.Linearizable != "no" }

// Options tune Verdict.
type Options struct {
	TimeLimit time.Duration // per key, for the linearizability check; default 10s
	HTMLDir   string        // where to write visualizations of failing keys
}

// Verdict runs the checks over what was added.
func (c *Checker) Verdict(ctx context.Context, opt Options) (Verdict, error) {
	if opt.TimeLimit == 0 {
		opt.TimeLimit = 10 * time.Second
	}
	v := Verdict{Events: c.events, Origin: c.mutex.Origin(), Linearizable: "skipped"}
	keys := map[string]bool{}
	for k := range c.mutex.Intervals() {
		keys[k] = true
	}
	for k := range c.resources.current {
		keys[k] = true
	}
	v.DoubleGrants = c.mutex.DoubleGrants()
	for _, d := range v.DoubleGrants {
		v.Violations = append(v.Violations, Violation{Kind: "double grant: " + d.Kind, Key: d.Key,
			Events: []int64{d.Held.StartIndex, d.Second.StartIndex}, Text: d.Describe(v.Origin)})
	}
	v.Violations = append(v.Violations, TokenOrder(c.mutex)...)
	v.Violations = append(v.Violations, c.resources.Violations...)
	v.RefusedWrites = c.resources.Refused
	if c.linear != nil {
		for k := range c.linear.ops {
			keys[k] = true
		}
		res, err := c.linear.Check(ctx, opt.TimeLimit, opt.HTMLDir)
		if err != nil {
			return v, err
		}
		v.Linear = res
		v.Linearizable = "yes"
		for _, r := range res {
			switch r.Result {
			case porcupine.Illegal:
				v.Linearizable = "no"
			case porcupine.Unknown:
				if v.Linearizable == "yes" {
					v.Linearizable = "unknown"
				}
			}
		}
	}
	v.Keys = len(keys)
	return v, nil
}

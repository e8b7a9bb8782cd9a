// Package explore searches for the violations nobody scripted: it generates
// cases (a workload and one to four faults on a schedule) from the fault
// registry, runs them one after the other on the runner's one case flow,
// steers towards the lock-state transitions seen rarely, tells each
// violation it finds known (a rule of matrix/expectations.yaml predicts
// it) or new, and shrinks each to the smallest scenario file that still
// shows it. Its output is a scenario file, the format people write.
package explore

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/workload"
)

// Schedule is one case as explore makes, mutates and shrinks it: a
// workload, a duration, a seed and fault steps. It becomes a case through
// its scenario file (Scenario), so what explore runs is exactly what
// `locklab run` runs from the file.
type Schedule struct {
	Approach string
	// Workload holds the keys a scenario's `workload:` takes (Kind,
	// Clients, Keys, Hold, TTL, AcquireTimeout, Fenced, Renew, HonourLease,
	// Reentry).
	Workload workload.Spec
	Duration time.Duration
	Seed     uint64
	Faults   []Fault
}

// Fault is one entry of a schedule's faults, as its scenario file writes
// it.
type Fault = scenario.Entry

// Param is one option of a fault, as written.
type Param = scenario.Param

// Clone is a deep copy: mutating and shrinking work on copies.
func (s Schedule) Clone() Schedule {
	c := s
	c.Faults = make([]Fault, len(s.Faults))
	for i, f := range s.Faults {
		f.Params = append([]Param(nil), f.Params...)
		f.Target.Nodes = append([]string(nil), f.Target.Nodes...)
		c.Faults[i] = f
	}
	return c
}

// Kinds are the fault kinds of the schedule, each once, in order.
func (s Schedule) Kinds() []string {
	return distinct(s.Faults, func(f Fault) string { return f.Kind })
}

// Summary is the schedule in one line, for the terminal and reports.
func (s Schedule) Summary() string {
	var fs []string
	for _, f := range s.Faults {
		fs = append(fs, faultSummary(f))
	}
	w := s.Workload
	extra := ""
	for _, x := range []struct {
		on   bool
		name string
	}{{w.Fenced, "fenced"}, {w.Renew, "renew"}, {w.HonourLease, "honour-lease"}} {
		if x.on {
			extra += ", " + x.name
		}
	}
	if thinks(w) {
		extra += ", think " + w.Think.String()
	}
	if w.Reentry > 0 {
		extra += fmt.Sprintf(", re-entry in %.0f%% of holds", 100*w.Reentry)
	}
	faults := "no fault"
	if len(fs) > 0 {
		faults = strings.Join(fs, "; ")
	}
	return fmt.Sprintf("%s, %d clients, %d key(s), hold %s, ttl %v%s, %v: %s", w.Kind, w.Clients, w.Keys, w.Hold, w.TTL, extra, s.Duration, faults)
}

func faultSummary(f Fault) string {
	var b strings.Builder
	b.WriteString(f.Kind)
	for _, p := range f.Params {
		fmt.Fprintf(&b, " %s=%s", p.Name, p.Value)
	}
	fmt.Fprintf(&b, " on %s at %v", f.Target, f.At)
	switch {
	case f.When != "" && f.On == scenario.OnRenewed:
		fmt.Fprintf(&b, " (once %s's holder renewed)", f.When)
	case f.When != "" && f.On == scenario.OnReleasing:
		fmt.Fprintf(&b, " (as %s's next release is asked)", f.When)
	case f.When != "":
		fmt.Fprintf(&b, " (once %s is held)", f.When)
	}
	if f.For > 0 {
		fmt.Fprintf(&b, " for %v", f.For)
	}
	return b.String()
}

// Draft is s as a scenario file named name, without a comment or an
// expectation.
func (s Schedule) Draft(name string) scenario.Draft {
	return scenario.Draft{Name: name, Approach: s.Approach, Workload: s.Workload, Duration: s.Duration, Seed: s.Seed, Faults: s.Faults}
}

// Scenario is s's scenario file named name (scenario.Parse reads it back).
func (s Schedule) Scenario(name string) []byte { return scenario.Format(s.Draft(name)) }

// thinks reports whether w's clients wait after a release.
func thinks(w workload.Spec) bool { return w.Think.A > 0 || w.Think.B > 0 }

// distinct is key of each of xs, each once, in order.
func distinct[T any](xs []T, key func(T) string) []string {
	var out []string
	for _, x := range xs {
		if k := key(x); !contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

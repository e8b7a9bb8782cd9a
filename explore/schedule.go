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
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/workload"
)

// Schedule is one case as explore makes, mutates and shrinks it: a
// workload, a duration, a seed and fault steps. It becomes a case through
// its scenario file (Scenario), so what explore runs is exactly what
// `locklab run` runs from the file.
type Schedule struct {
	Approach string
	// Workload holds the keys a scenario's `workload:` takes (Kind,
	// Clients, Keys, Hold, TTL, AcquireTimeout, Fenced, Renew, HonourLease).
	Workload workload.Spec
	Duration time.Duration
	Seed     uint64
	Faults   []Fault
}

// Fault is one entry of a schedule's faults.
type Fault struct {
	Kind   string
	Params []Param // the fault's options, as a scenario file writes them
	Target chaos.Selector
	At     time.Duration
	// For is how long the injection lasts before its heal; 0 for a fault
	// that is over when it is injected (a crash, a restart).
	For time.Duration
	// When, if set, is a key: the fault fires once some client holds it,
	// not before At.
	When string
}

// Param is one option of a fault: its name and its value as written.
type Param struct{ Name, Value string }

// Param returns the value of option name ("" when not set).
func (f Fault) Param(name string) string {
	for _, p := range f.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// setParam sets option name to value.
func (f *Fault) setParam(name, value string) {
	for i := range f.Params {
		if f.Params[i].Name == name {
			f.Params[i].Value = value
			return
		}
	}
	f.Params = append(f.Params, Param{name, value})
}

// End is when the fault's window closes (its start for one without a
// length).
func (f Fault) End() time.Duration { return f.At + f.For }

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
		fs = append(fs, f.summary())
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
	faults := "no fault"
	if len(fs) > 0 {
		faults = strings.Join(fs, "; ")
	}
	return fmt.Sprintf("%s, %d clients, %d key(s), hold %s, ttl %v%s, %v: %s", w.Kind, w.Clients, w.Keys, w.Hold, w.TTL, extra, s.Duration, faults)
}

func (f Fault) summary() string {
	var b strings.Builder
	b.WriteString(f.Kind)
	for _, p := range f.Params {
		fmt.Fprintf(&b, " %s=%s", p.Name, p.Value)
	}
	fmt.Fprintf(&b, " on %s at %v", f.Target, f.At)
	if f.When != "" {
		fmt.Fprintf(&b, " (once %s is held)", f.When)
	}
	if f.For > 0 {
		fmt.Fprintf(&b, " for %v", f.For)
	}
	return b.String()
}

// ScenarioFile is what a scenario file says besides the schedule: its
// name, the comment that opens it, and what it expects.
type ScenarioFile struct {
	Name    string
	Comment []string // lines, without the leading "# "
	// Expect is the outcomes the approach must show (none: no expect:).
	Expect []string
}

// Scenario renders s as a scenario file (scenario.Parse reads it back).
func (s Schedule) Scenario(sf ScenarioFile) []byte {
	var b strings.Builder
	for _, l := range sf.Comment {
		if l == "" {
			b.WriteString("#\n")
			continue
		}
		b.WriteString("# " + l + "\n")
	}
	w := s.Workload
	fmt.Fprintf(&b, "name: %s\n", yamlString(sf.Name))
	fmt.Fprintf(&b, "approaches: [%s]\n", yamlString(s.Approach))
	keys := []string{"kind: " + w.Kind, fmt.Sprintf("clients: %d", w.Clients), fmt.Sprintf("keys: %d", w.Keys),
		"hold: " + w.Hold.String(), "ttl: " + dur(w.TTL)}
	if w.AcquireTimeout > 0 {
		keys = append(keys, "acquire-timeout: "+dur(w.AcquireTimeout))
	}
	if thinks(w) {
		keys = append(keys, "think: "+w.Think.String())
	}
	for _, x := range []struct {
		on   bool
		name string
	}{{w.Fenced, "fenced"}, {w.Renew, "renew"}, {w.HonourLease, "honour-lease"}} {
		if x.on {
			keys = append(keys, x.name+": true")
		}
	}
	fmt.Fprintf(&b, "workload: {%s}\n", strings.Join(keys, ", "))
	fmt.Fprintf(&b, "duration: %s\n", dur(s.Duration))
	fmt.Fprintf(&b, "seed: %d\n", s.Seed)
	if len(s.Faults) > 0 {
		b.WriteString("faults:\n")
		for _, f := range s.Faults {
			b.WriteString("  - " + f.yaml() + "\n")
		}
	}
	if len(sf.Expect) > 0 {
		fmt.Fprintf(&b, "expect:\n  %s: [%s]\n", yamlString(s.Approach), strings.Join(sf.Expect, ", "))
	}
	return []byte(b.String())
}

// thinks reports whether w's clients wait after a release.
func thinks(w workload.Spec) bool { return w.Think.A > 0 || w.Think.B > 0 }

// yaml is the fault as one flow mapping.
func (f Fault) yaml() string {
	parts := []string{"fault: " + f.Kind, "target: " + selectorYAML(f.Target)}
	for _, p := range f.Params {
		parts = append(parts, p.Name+": "+paramYAML(p.Value))
	}
	parts = append(parts, "at: "+dur(f.At))
	if f.When != "" {
		parts = append(parts, "when: {holding: "+strconv.Quote(f.When)+"}")
	}
	if f.For > 0 {
		parts = append(parts, "for: "+dur(f.For))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// paramYAML writes an option's value: a number bare (a fault's numeric
// option must read as a number), anything else as yamlString does.
func paramYAML(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return v
	}
	return yamlString(v)
}

func selectorYAML(s chaos.Selector) string {
	var parts []string
	if s.Client != "" {
		parts = append(parts, "client: "+strconv.Quote(s.Client))
	}
	if s.Key != "" {
		parts = append(parts, "key: "+strconv.Quote(s.Key))
	}
	if s.Node != "" {
		parts = append(parts, "node: "+yamlString(s.Node))
	}
	if len(s.Nodes) > 0 {
		ns := make([]string, len(s.Nodes))
		for i, n := range s.Nodes {
			ns[i] = yamlString(n)
		}
		parts = append(parts, "nodes: ["+strings.Join(ns, ", ")+"]")
	}
	if s.Server != "" {
		parts = append(parts, "server: "+yamlString(s.Server))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// dur writes a duration as scenario files read it ("0" for zero).
func dur(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.String()
}

// yamlString writes s bare when YAML reads it back as the same string,
// quoted otherwise.
func yamlString(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.", r)
		if !ok {
			return strconv.Quote(s)
		}
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~":
		return strconv.Quote(s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.Quote(s)
	}
	return s
}

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

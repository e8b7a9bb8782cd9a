package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/workload"
)

// Draft is a scenario as a program writes it (locklab explore's
// schedules and found files): one approach, its workload, faults with
// their options as text, and what it must show. Format writes it; Parse
// reads it back.
type Draft struct {
	Name     string
	Comment  []string // the lines that open the file, without the leading "# "
	Approach string
	// Workload holds the keys a scenario's `workload:` takes (Kind,
	// Clients, Keys, Hold, TTL, AcquireTimeout, Think, Fenced, Renew,
	// HonourLease, Reentry).
	Workload workload.Spec
	Duration time.Duration
	Seed     uint64
	Faults   []Entry
	Expect   []string // the outcomes the approach must show (none: no expect:)
}

// Entry is one entry of a draft's faults.
type Entry struct {
	Kind   string
	Params []Param // the fault's options, in the order written
	Target chaos.Selector
	At     time.Duration
	// For is how long the injection lasts before its heal; 0 for a fault
	// that is over when it is injected (a crash, a restart).
	For time.Duration
	// When, if set, is a key: the fault fires once some client holds it
	// (or On says what of the key it waits for), not before At.
	When string
	// On is what of When's key the fault waits for: "" or OnHolding (a
	// holder), OnRenewed (its holder renewed since its grant), OnReleasing
	// (its next release asked).
	On string
}

// The conditions a fault's `when:` may wait for.
const (
	OnHolding   = "holding"
	OnRenewed   = "renewed"
	OnReleasing = "releasing"
)

// Param is one option of a fault: its name and its value as written.
type Param struct{ Name, Value string }

// Param returns the value of option name ("" when not set).
func (e Entry) Param(name string) string {
	for _, p := range e.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// SetParam sets option name to value.
func (e *Entry) SetParam(name, value string) {
	for i := range e.Params {
		if e.Params[i].Name == name {
			e.Params[i].Value = value
			return
		}
	}
	e.Params = append(e.Params, Param{name, value})
}

// End is when the entry's window closes (its start for one without a
// length).
func (e Entry) End() time.Duration { return e.At + e.For }

// Format writes d as a scenario file.
func Format(d Draft) []byte {
	var b strings.Builder
	for _, l := range d.Comment {
		if l == "" {
			b.WriteString("#\n")
			continue
		}
		b.WriteString("# " + l + "\n")
	}
	fmt.Fprintf(&b, "name: %s\n", yamlString(d.Name))
	fmt.Fprintf(&b, "approaches: [%s]\n", yamlString(d.Approach))
	fmt.Fprintf(&b, "workload: {%s}\n", strings.Join(workloadKeys(d.Workload), ", "))
	fmt.Fprintf(&b, "duration: %s\n", FormatDuration(d.Duration))
	fmt.Fprintf(&b, "seed: %d\n", d.Seed)
	if len(d.Faults) > 0 {
		b.WriteString("faults:\n")
		for _, e := range d.Faults {
			b.WriteString("  - " + e.yaml() + "\n")
		}
	}
	if len(d.Expect) > 0 {
		fmt.Fprintf(&b, "expect:\n  %s: [%s]\n", yamlString(d.Approach), strings.Join(d.Expect, ", "))
	}
	return []byte(b.String())
}

// workloadKeys are w's keys as `workload:` takes them.
func workloadKeys(w workload.Spec) []string {
	keys := []string{"kind: " + w.Kind, fmt.Sprintf("clients: %d", w.Clients), fmt.Sprintf("keys: %d", w.Keys),
		"hold: " + w.Hold.String(), "ttl: " + FormatDuration(w.TTL)}
	if w.AcquireTimeout > 0 {
		keys = append(keys, "acquire-timeout: "+FormatDuration(w.AcquireTimeout))
	}
	if w.Think.A > 0 || w.Think.B > 0 {
		keys = append(keys, "think: "+w.Think.String())
	}
	if w.Reentry > 0 {
		keys = append(keys, "reentry: "+strconv.FormatFloat(w.Reentry, 'g', -1, 64))
	}
	for _, x := range []struct {
		on   bool
		name string
	}{{w.Fenced, "fenced"}, {w.Renew, "renew"}, {w.HonourLease, "honour-lease"}} {
		if x.on {
			keys = append(keys, x.name+": true")
		}
	}
	return keys
}

// yaml is the entry as one flow mapping.
func (e Entry) yaml() string {
	parts := []string{"fault: " + e.Kind, "target: " + selectorYAML(e.Target)}
	for _, p := range e.Params {
		parts = append(parts, p.Name+": "+paramYAML(p.Value))
	}
	parts = append(parts, "at: "+FormatDuration(e.At))
	if e.When != "" {
		on := e.On
		if on == "" {
			on = OnHolding
		}
		parts = append(parts, "when: {"+on+": "+strconv.Quote(e.When)+"}")
	}
	if e.For > 0 {
		parts = append(parts, "for: "+FormatDuration(e.For))
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

// FormatDuration writes a duration as scenario files read it ("0" for
// zero).
func FormatDuration(d time.Duration) string {
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

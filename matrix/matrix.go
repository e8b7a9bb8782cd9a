// Package matrix holds the known-outcome matrix: every lock approach against
// every fault, what the literature expects of each cell (expectations.yaml,
// with the mechanism and a source per rule) and the scenario that runs each
// fault (faults/*.yaml). It only reads and validates; the runner runs the
// cells and report writes the table.
package matrix

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/verdict"
)

// Shipped is the matrix in this repository, built into the binary.
//
//go:embed expectations.yaml faults/*.yaml
var Shipped embed.FS

// Matrix is the expectations and the fault scenarios.
type Matrix struct {
	Faults []Fault // in file order
	cells  map[string][]Rule
}

// Fault is one column: its name, what it does, the scenario that runs it.
type Fault struct {
	Name        string
	Description string
	Scenario    *scenario.Scenario
}

// Rule is one expectation rule of a fault's column.
type Rule struct {
	Line   int
	Match  string // an approach name, weak:NAME, cap:NAME, unsafe or *
	Expect verdict.Expectation
	Why    string // the mechanism, one line
	Source string
}

// Cell is what the matrix says of one approach under one fault.
type Cell struct {
	Approach, Fault string
	Applies         bool // false: n/a (the fault's scenario does not run this approach)
	Expect          verdict.Expectation
	Why, Source     string
	Rule            string // which rule matched
	// NotChosen: the cell applies but this run leaves it out (a plan's
	// choice of cells, not the matrix's).
	NotChosen bool
}

// ExpectsViolation reports whether the cell expects an unsafe outcome to
// show (a cell the lab must catch).
func (c Cell) ExpectsViolation() bool {
	return slices.ContainsFunc(c.Expect.Outcomes, verdict.Outcome.Unsafe)
}

type file struct {
	Faults yaml.Node            `yaml:"faults"`
	Cells  map[string]yaml.Node `yaml:"cells"`
}

type ruleFile struct {
	Match  string   `yaml:"match"`
	Expect []string `yaml:"expect"`
	Why    string   `yaml:"why"`
	Source string   `yaml:"source"`
}

// Load reads expectations.yaml and faults/*.yaml from fsys and validates
// every name against reg: every fault has a scenario, every rule names an
// approach, capability or weakness that exists, every rule has a mechanism
// and a source, every approach of every fault has a cell.
func Load(fsys fs.FS, reg *impls.Registry) (*Matrix, error) {
	b, err := fs.ReadFile(fsys, "expectations.yaml")
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	var raw file
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("matrix expectations.yaml: %w", err)
	}
	m := &Matrix{cells: map[string][]Rule{}}
	if raw.Faults.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("matrix expectations.yaml: faults is a mapping of name: description")
	}
	for i := 0; i+1 < len(raw.Faults.Content); i += 2 {
		name, desc := raw.Faults.Content[i].Value, raw.Faults.Content[i+1].Value
		path := "faults/" + name + ".yaml"
		sb, err := fs.ReadFile(fsys, path)
		if err != nil {
			return nil, fmt.Errorf("matrix expectations.yaml line %d: fault %s: %w", raw.Faults.Content[i].Line, name, err)
		}
		s, err := scenario.Parse(sb, reg)
		if err != nil {
			return nil, fmt.Errorf("matrix %s: %w", path, err)
		}
		if s.Name != name {
			return nil, fmt.Errorf("matrix %s: name %q, want %q", path, s.Name, name)
		}
		if len(s.Expect) > 0 {
			return nil, fmt.Errorf("matrix %s: expectations belong in expectations.yaml, not in the fault's scenario", path)
		}
		s.Path = path
		m.Faults = append(m.Faults, Fault{Name: name, Description: desc, Scenario: s})
	}
	for name, n := range raw.Cells {
		f := m.fault(name)
		if f == nil {
			return nil, fmt.Errorf("matrix expectations.yaml line %d: cells for unknown fault %q", n.Line, name)
		}
		var rules []yaml.Node
		if err := n.Decode(&rules); err != nil {
			return nil, fmt.Errorf("matrix expectations.yaml line %d: cells.%s is a list of rules", n.Line, name)
		}
		for _, rn := range rules {
			r, err := parseRule(&rn, reg)
			if err != nil {
				return nil, fmt.Errorf("matrix expectations.yaml line %d: cells.%s: %w", rn.Line, name, err)
			}
			m.cells[name] = append(m.cells[name], r)
		}
	}
	for _, f := range m.Faults {
		for _, a := range f.Scenario.Approaches {
			ap, _ := reg.Get(a)
			if _, ok := m.rule(f.Name, ap); !ok {
				return nil, fmt.Errorf("matrix: no expectation for %s under %s (add a rule to cells.%s)", a, f.Name, f.Name)
			}
		}
	}
	return m, nil
}

func parseRule(n *yaml.Node, reg *impls.Registry) (Rule, error) {
	var rf ruleFile
	if err := n.Decode(&rf); err != nil {
		return Rule{}, err
	}
	r := Rule{Line: n.Line, Match: rf.Match, Why: rf.Why, Source: rf.Source}
	switch {
	case rf.Match == "":
		return r, fmt.Errorf("a rule needs match: (an approach, weak:NAME, cap:NAME, unsafe or *)")
	case rf.Why == "":
		return r, fmt.Errorf("rule %s: why: the mechanism in one line", rf.Match)
	case rf.Source == "":
		return r, fmt.Errorf("rule %s: source: where the expectation comes from", rf.Match)
	case len(rf.Expect) == 0:
		return r, fmt.Errorf("rule %s: expect: the outcomes", rf.Match)
	}
	switch {
	case rf.Match == "*" || rf.Match == "unsafe":
	case strings.HasPrefix(rf.Match, "cap:"):
		if !slices.Contains(allCaps(), strings.TrimPrefix(rf.Match, "cap:")) {
			return r, fmt.Errorf("unknown capability %q (known: %s)", rf.Match, strings.Join(allCaps(), ", "))
		}
	case strings.HasPrefix(rf.Match, "weak:"):
		if !slices.Contains(allWeaknesses(), strings.TrimPrefix(rf.Match, "weak:")) {
			return r, fmt.Errorf("unknown weakness %q (known: %s)", rf.Match, strings.Join(allWeaknesses(), ", "))
		}
	default:
		if _, err := reg.Get(rf.Match); err != nil {
			return r, err
		}
	}
	e, err := verdict.ParseList(rf.Expect)
	if err != nil {
		return r, fmt.Errorf("rule %s: %w", rf.Match, err)
	}
	r.Expect = e
	r.Expect.Why = rf.Why + " (" + rf.Source + ")"
	return r, nil
}

func allCaps() []string { return impls.CapabilityNames() }

func allWeaknesses() []string { return impls.WeaknessNames() }

func (m *Matrix) fault(name string) *Fault {
	for i := range m.Faults {
		if m.Faults[i].Name == name {
			return &m.Faults[i]
		}
	}
	return nil
}

// rule finds the most specific rule of fault that matches a: its name,
// then unsafe (an approach that breaks with no fault breaks under any),
// then a weakness, then a capability, then *.
func (m *Matrix) rule(fault string, a impls.Approach) (Rule, bool) {
	rules := m.cells[fault]
	rank := func(r Rule) int {
		switch {
		case r.Match == a.Name:
			return 0
		case r.Match == "unsafe" && !a.Safe:
			return 1
		case strings.HasPrefix(r.Match, "weak:") && slices.Contains(a.Weak.Names(), strings.TrimPrefix(r.Match, "weak:")):
			return 2
		case strings.HasPrefix(r.Match, "cap:") && slices.Contains(a.Caps.Names(), strings.TrimPrefix(r.Match, "cap:")):
			return 3
		case r.Match == "*":
			return 4
		}
		return -1
	}
	best, bestRank := Rule{}, 99
	for _, r := range rules {
		if k := rank(r); k >= 0 && k < bestRank {
			best, bestRank = r, k
		}
	}
	return best, bestRank < 99
}

// Cell says what the matrix expects of approach a under fault.
func (m *Matrix) Cell(a impls.Approach, fault string) Cell {
	c := Cell{Approach: a.Name, Fault: fault}
	f := m.fault(fault)
	if f == nil || !slices.Contains(f.Scenario.Approaches, a.Name) {
		return c
	}
	r, ok := m.rule(fault, a)
	if !ok {
		return c
	}
	c.Applies, c.Expect, c.Why, c.Source, c.Rule = true, r.Expect, r.Why, r.Source, r.Match
	return c
}

// FaultNames lists the columns in order.
func (m *Matrix) FaultNames() []string {
	out := make([]string, len(m.Faults))
	for i, f := range m.Faults {
		out[i] = f.Name
	}
	return out
}

// Fault returns the column named name.
func (m *Matrix) Fault(name string) (Fault, error) {
	if f := m.fault(name); f != nil {
		return *f, nil
	}
	names := m.FaultNames()
	sort.Strings(names)
	return Fault{}, fmt.Errorf("unknown matrix fault %q (known: %s)", name, strings.Join(names, ", "))
}

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

	"github.com/locklab/locklab/checker"
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
	// mechanisms: which approaches' double grants are known to come
	// about by which mechanism (checker.RenewedOverAnother, ...).
	mechanisms []MechanismRule
}

// MechanismRule says that the approaches it matches (as a rule's match)
// show these mechanisms in their double grants, and why.
type MechanismRule struct {
	Line   int
	Match  string
	Shows  []string
	Why    string
	Source string
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
	Faults     yaml.Node            `yaml:"faults"`
	Cells      map[string]yaml.Node `yaml:"cells"`
	Mechanisms []yaml.Node          `yaml:"mechanisms"`
}

type mechanismFile struct {
	Match  string   `yaml:"match"`
	Shows  []string `yaml:"shows"`
	Why    string   `yaml:"why"`
	Source string   `yaml:"source"`
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
	for _, n := range raw.Mechanisms {
		r, err := parseMechanism(&n, reg)
		if err != nil {
			return nil, fmt.Errorf("matrix expectations.yaml line %d: mechanisms: %w", n.Line, err)
		}
		m.mechanisms = append(m.mechanisms, r)
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

// Mechanisms are the names a mechanisms entry may give (the checker's).
var Mechanisms = []string{checker.RenewedOverAnother, checker.ReleasedOverAnother}

func parseMechanism(n *yaml.Node, reg *impls.Registry) (MechanismRule, error) {
	var mf mechanismFile
	if err := n.Decode(&mf); err != nil {
		return MechanismRule{}, err
	}
	r := MechanismRule{Line: n.Line, Match: mf.Match, Shows: mf.Shows, Why: mf.Why, Source: mf.Source}
	switch {
	case mf.Why == "":
		return r, fmt.Errorf("%s: why: the mechanism in one line", mf.Match)
	case mf.Source == "":
		return r, fmt.Errorf("%s: source: where it comes from", mf.Match)
	case len(mf.Shows) == 0:
		return r, fmt.Errorf("%s: shows: the mechanisms (%s)", mf.Match, strings.Join(Mechanisms, ", "))
	}
	if err := checkMatch(mf.Match, reg); err != nil {
		return r, err
	}
	for _, s := range mf.Shows {
		if !slices.Contains(Mechanisms, s) {
			return r, fmt.Errorf("%s: unknown mechanism %q (known: %s)", mf.Match, s, strings.Join(Mechanisms, ", "))
		}
	}
	return r, nil
}

// Shows reports whether approach a is known to show mechanism (by an
// entry of mechanisms that matches it).
func (m *Matrix) Shows(a impls.Approach, mechanism string) bool {
	return slices.ContainsFunc(m.mechanisms, func(r MechanismRule) bool {
		return matches(r.Match, a) >= 0 && slices.Contains(r.Shows, mechanism)
	})
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
	if err := checkMatch(rf.Match, reg); err != nil {
		return r, err
	}
	e, err := verdict.ParseList(rf.Expect)
	if err != nil {
		return r, fmt.Errorf("rule %s: %w", rf.Match, err)
	}
	r.Expect = e
	r.Expect.Why = rf.Why + " (" + rf.Source + ")"
	return r, nil
}

// checkMatch validates a rule's match: an approach that exists, a known
// capability or weakness, unsafe or *.
func checkMatch(match string, reg *impls.Registry) error {
	switch {
	case match == "":
		return fmt.Errorf("a rule needs match: (an approach, weak:NAME, cap:NAME, unsafe or *)")
	case match == "*" || match == "unsafe":
	case strings.HasPrefix(match, "cap:"):
		if !slices.Contains(allCaps(), strings.TrimPrefix(match, "cap:")) {
			return fmt.Errorf("unknown capability %q (known: %s)", match, strings.Join(allCaps(), ", "))
		}
	case strings.HasPrefix(match, "weak:"):
		if !slices.Contains(allWeaknesses(), strings.TrimPrefix(match, "weak:")) {
			return fmt.Errorf("unknown weakness %q (known: %s)", match, strings.Join(allWeaknesses(), ", "))
		}
	default:
		if _, err := reg.Get(match); err != nil {
			return err
		}
	}
	return nil
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
	best, bestRank := Rule{}, 99
	for _, r := range m.cells[fault] {
		if k := matches(r.Match, a); k >= 0 && k < bestRank {
			best, bestRank = r, k
		}
	}
	return best, bestRank < 99
}

// matches ranks how specifically match names approach a (0: by name,
// then unsafe, a weakness, a capability, *); -1: it does not.
func matches(match string, a impls.Approach) int {
	switch {
	case match == a.Name:
		return 0
	case match == "unsafe" && !a.Safe:
		return 1
	case strings.HasPrefix(match, "weak:") && slices.Contains(a.Weak.Names(), strings.TrimPrefix(match, "weak:")):
		return 2
	case strings.HasPrefix(match, "cap:") && slices.Contains(a.Caps.Names(), strings.TrimPrefix(match, "cap:")):
		return 3
	case match == "*":
		return 4
	}
	return -1
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

// Package scenario reads scenario files: which approaches, what the clients
// do, for how long, which faults when, and what must happen. Everything is
// validated before a server starts, and every error names its line.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/locklab/locklab/yamlline"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// maxFileSize bounds what Load reads: a scenario is a page, not a stream.
const maxFileSize = 1 << 20

// Scenario is one scenario file.
type Scenario struct {
	Name        string
	Description string // the file's leading comment: what it shows and why
	Approaches  []string
	Workload    workload.Spec // Duration and Seed are the scenario's own, below
	Processes   bool          // clients run as worker processes
	Duration    time.Duration
	Seed        uint64
	Faults      []Fault
	Servers     Servers
	// Expect maps an approach name, "cap:<capability>" or "*" to the
	// outcomes a case of it must show; see ExpectFor.
	Expect map[string]verdict.Expectation
	Path   string
	// StallThreshold is how late a wake-up of the stall monitor's probes
	// must be to be a stall of the lab (`stall_threshold: 250ms`): 0, the
	// default; negative (`stall_threshold: 0` in the file), no monitor.
	StallThreshold time.Duration
}

// Servers say how locklab runs the servers of the scenario.
type Servers struct {
	// Settings are how each kind's servers run, where the file says
	// (`servers: {redis: {persistence: aof-always}}`: cluster.Kind.Settings).
	Settings cluster.Settings
	// In is where the servers must run: "" (anywhere) or "docker" (in
	// containers: a fault such as server-isolate needs them there).
	In string
}

// Fault is one entry of `faults:`: a fault with its options, where it acts
// and when.
type Fault struct {
	Line  int
	Fault chaos.Fault
	Step  chaos.Step
}

// file is the YAML shape; decoded with unknown keys refused.
type file struct {
	Name       string         `yaml:"name"`
	Approaches []string       `yaml:"approaches"`
	Workload   yaml.Node      `yaml:"workload"` // a workload.Spec: see parseWorkload
	Clients    clientsFile    `yaml:"clients"`
	Duration   chaos.Duration `yaml:"duration"`
	Seed       *uint64        `yaml:"seed"`
	Faults     []yaml.Node    `yaml:"faults"`
	Expect     yaml.Node      `yaml:"expect"`
	Notes      string         `yaml:"notes"`
	Servers    serversFile    `yaml:"servers"`
	// StallThreshold: see Scenario.StallThreshold.
	StallThreshold *chaos.Duration `yaml:"stall_threshold"`
	// ApproachFiles: see ApproachFiles.
	ApproachFiles []string `yaml:"approach-files"`
}

type serversFile struct {
	In string `yaml:"in"`
	// Kinds are the settings of each kind the file names.
	Kinds map[string]map[string]string `yaml:",inline"`
}

type clientsFile struct {
	As string `yaml:"as"` // goroutines (default) | processes
}

// Load reads and validates a scenario file. reg names the approaches that
// exist; every error is one line naming the file and line.
func Load(path string, reg *impls.Registry) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("scenario %s: larger than %d bytes; not a scenario file", path, maxFileSize)
	}
	s, err := Parse(b, reg)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// ApproachFiles are the approach files a scenario file names under
// `approach-files:` (a regression's library pinned to the version that had
// the bug, and to the one that fixed it), relative to the scenario's
// folder. Their approaches must be registered before Load checks the
// scenario's approaches: Load itself reads no approach file.
func ApproachFiles(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, yamlline.Err(err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil // Load says what is wrong
	}
	root := doc.Content[0]
	var files []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "approach-files" {
			continue
		}
		n := root.Content[i+1]
		if err := n.Decode(&files); err != nil || len(files) == 0 {
			return nil, fmt.Errorf("scenario %s: line %d: approach-files: want a list of approach files, like [affected.yaml, fixed.yaml]", path, n.Line)
		}
	}
	dir := filepath.Dir(path)
	for i, f := range files {
		if !filepath.IsAbs(f) {
			files[i] = filepath.Join(dir, f)
		}
	}
	return files, nil
}

// Parse reads and validates a scenario from its bytes.
func Parse(b []byte, reg *impls.Registry) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlline.Err(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, errors.New("empty file")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: a scenario is a mapping (name:, approaches:, workload:, ...)", root.Line)
	}
	var raw file
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		return nil, yamlline.Err(err)
	}
	var err error
	s := &Scenario{Name: raw.Name, Description: leadingComment(root, &doc), Duration: raw.Duration.D(), Expect: map[string]verdict.Expectation{}}
	if s.Name == "" {
		return nil, fmt.Errorf("line %d: name is missing", root.Line)
	}
	if len(raw.Approaches) == 0 {
		return nil, fmt.Errorf("line %d: approaches is missing (known: %s)", root.Line, strings.Join(reg.Names(), ", "))
	}
	s.Approaches, err = expandApproaches(raw.Approaches, reg)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", yamlline.KeyLine(root, "approaches"), err)
	}
	if s.Duration <= 0 {
		return nil, fmt.Errorf("line %d: duration must be positive, like 20s", yamlline.KeyLine(root, "duration"))
	}
	if t := raw.StallThreshold; t != nil {
		switch {
		case *t < 0:
			return nil, fmt.Errorf("line %d: stall_threshold %v: want a duration like 250ms, or 0 for no stall monitor", yamlline.KeyLine(root, "stall_threshold"), *t)
		case *t == 0:
			s.StallThreshold = -1
		default:
			s.StallThreshold = t.D()
		}
	}
	s.Seed = 1
	if raw.Seed != nil {
		s.Seed = *raw.Seed
	}
	w, err := parseWorkload(&raw.Workload, yamlline.KeyLine(root, "workload"))
	if err != nil {
		return nil, err
	}
	s.Workload = w
	switch raw.Clients.As {
	case "", "goroutines":
	case "processes":
		s.Processes = true
	default:
		return nil, fmt.Errorf("line %d: clients.as %q: want goroutines or processes", yamlline.KeyLine(root, "clients"), raw.Clients.As)
	}
	if s.Servers.Settings, err = serverSettings(raw.Servers.Kinds); err != nil {
		return nil, fmt.Errorf("line %d: %w", yamlline.KeyLine(root, "servers"), err)
	}
	switch raw.Servers.In {
	case "", "docker":
		s.Servers.In = raw.Servers.In
	default:
		return nil, fmt.Errorf("line %d: servers.in %q: want docker, or leave it out", yamlline.KeyLine(root, "servers"), raw.Servers.In)
	}
	for i := range raw.Faults {
		f, err := parseFault(&raw.Faults[i], s)
		if err != nil {
			return nil, err
		}
		s.Faults = append(s.Faults, f)
		// A pause or a crash must stop the whole client, heartbeats and
		// all, which only a process allows: unless the file says how
		// clients run, they run as processes.
		if raw.Clients.As == "" && chaos.NeedsOf(f.Fault).ClientProcess {
			s.Processes = true
		}
	}
	if err := parseExpect(&raw.Expect, s, reg); err != nil {
		return nil, err
	}
	return s, nil
}

// parseExpect reads `expect:`: a map from an approach name, "cap:<name>"
// or "*" to a list of outcomes.
func parseExpect(n *yaml.Node, s *Scenario, reg *impls.Registry) error {
	if n.Kind == 0 {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: expect is a mapping: approach (or cap:NAME, or *) -> [outcomes]", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		switch {
		case key == "*":
		case strings.HasPrefix(key, "cap:"):
			if !knownCapability(strings.TrimPrefix(key, "cap:")) {
				return fmt.Errorf("line %d: expect: unknown capability %q (known: %s)", k.Line, key, strings.Join(capabilityNames(), ", "))
			}
		default:
			if _, err := reg.Get(key); err != nil {
				return fmt.Errorf("line %d: expect: %w", k.Line, err)
			}
			if !contains(s.Approaches, key) {
				return fmt.Errorf("line %d: expect: %s is not among the scenario's approaches", k.Line, key)
			}
		}
		names, atLeast, err := expectList(v, key)
		if err != nil {
			return err
		}
		e, err := verdict.ParseList(names)
		if err != nil {
			return fmt.Errorf("line %d: expect.%s: %w", v.Line, key, err)
		}
		e.AtLeast = atLeast
		e.Why = fmt.Sprintf("scenario %s, expect.%s", s.Name, key)
		s.Expect[key] = e
	}
	return nil
}

// expectList reads one entry of `expect:`: a list of outcomes, one
// outcome, or {at-least: [outcomes]} (the outcomes must show, and any other
// violation may show too).
func expectList(v *yaml.Node, key string) (names []string, atLeast bool, err error) {
	const form = "want a list of outcomes like [safe] or [double-grant:outlived, lost-update], or {at-least: [outcomes]}"
	if v.Kind == yaml.MappingNode {
		if len(v.Content) != 2 || v.Content[0].Value != "at-least" {
			return nil, false, fmt.Errorf("line %d: expect.%s: %s", v.Line, key, form)
		}
		v, atLeast = v.Content[1], true
	}
	if err := v.Decode(&names); err != nil {
		var one string
		if v.Decode(&one) != nil {
			return nil, false, fmt.Errorf("line %d: expect.%s: %s", v.Line, key, form)
		}
		names = []string{one}
	}
	if len(names) == 0 {
		return nil, false, fmt.Errorf("line %d: expect.%s: empty list", v.Line, key)
	}
	if atLeast && slices.Contains(names, string(verdict.Safe)) {
		return nil, false, fmt.Errorf("line %d: expect.%s: at-least cannot hold safe (safe admits no violation)", v.Line, key)
	}
	return names, atLeast, nil
}

// ExpectFor is what the scenario says a case of approach a must show: its
// own entry, else the first capability entry it has (in file order of
// capability names, sorted), else "*". ok=false: the scenario says nothing
// about a.
func (s *Scenario) ExpectFor(a impls.Approach) (verdict.Expectation, bool) {
	if e, ok := s.Expect[a.Name]; ok {
		return e, true
	}
	caps := a.Caps.Names()
	sort.Strings(caps)
	for _, c := range caps {
		if e, ok := s.Expect["cap:"+c]; ok {
			return e, true
		}
	}
	e, ok := s.Expect["*"]
	return e, ok
}

func knownCapability(name string) bool { return contains(capabilityNames(), name) }

func capabilityNames() []string { return impls.CapabilityNames() }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// leadingComment is the comment block that opens the file.
func leadingComment(root, doc *yaml.Node) string {
	c := doc.HeadComment
	if c == "" {
		c = root.HeadComment
	}
	if c == "" && len(root.Content) > 0 {
		c = root.Content[0].HeadComment
	}
	var lines []string
	for _, l := range strings.Split(c, "\n") {
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// serverPrefix names every approach of one server kind in a scenario's
// approaches: "server:redis". A list written so takes in an approach added
// to that kind later without an edit.
const serverPrefix = "server:"

// expandApproaches turns the approaches a scenario names (approach names,
// or server:KIND for every approach of a kind, in name order) into
// approach names, each once, in order.
func expandApproaches(names []string, reg *impls.Registry) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range names {
		kind, isKind := strings.CutPrefix(n, serverPrefix)
		if !isKind {
			if _, err := reg.Get(n); err != nil {
				return nil, err
			}
			add(n)
			continue
		}
		found := false
		for _, a := range reg.All() {
			if string(a.Server) == kind {
				add(a.Name)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: no approach runs on server %q (servers: %s)", n, kind, strings.Join(serversOf(reg), ", "))
		}
	}
	return out, nil
}

// serversOf are the server kinds reg's approaches run on, sorted.
func serversOf(reg *impls.Registry) []string {
	var out []string
	for _, a := range reg.All() {
		if !slices.Contains(out, string(a.Server)) {
			out = append(out, string(a.Server))
		}
	}
	sort.Strings(out)
	return out
}

// serverSettings are the settings a file's servers: section gives its
// kinds, in the order of their names.
func serverSettings(kinds map[string]map[string]string) (cluster.Settings, error) {
	var out cluster.Settings
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		for _, name := range slices.Sorted(maps.Keys(kinds[kind])) {
			var err error
			if out, err = out.With(impls.Server(kind), name, kinds[kind][name]); err != nil {
				return "", fmt.Errorf("servers.%s: %w", kind, err)
			}
		}
	}
	return out, nil
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/adapter"
	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/scenario"
)

func cmdList(reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list", stdout)
	asJSON := fs.Bool("json", false, "print as JSON")
	faults := fs.Bool("faults", false, "list the faults scenarios can inject instead, with their options")
	files := addApproachFiles(fs)
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if code := files.register("list", reg, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locklab list: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	out := &errWriter{w: stdout}
	pinned, err := pinnedApproaches(shippedDirs("regressions"))
	if err != nil {
		fmt.Fprintf(stderr, "locklab list: %v\n", err)
		return exitUsage
	}
	if *faults {
		listFaults(*asJSON, out)
	} else if code := listTo(reg, pinned, *asJSON, out); code != exitOK {
		return code
	}
	if out.err != nil {
		fmt.Fprintf(stderr, "locklab list: write: %v\n", out.err)
		return exitInfra
	}
	return exitOK
}

// pinned is an approach of a regression folder: a library pinned to a
// version, run by that folder's scenario.
type pinned struct {
	scenario string
	approach impls.Approach
}

// pinnedApproaches reads the approach files that the scenarios of the
// regression folders in dirs (DIR/BUG/scenario.yaml) name.
func pinnedApproaches(dirs []string) ([]pinned, error) {
	var out []pinned
	for _, dir := range dirs {
		scenarios, err := filepath.Glob(filepath.Join(dir, "*", "scenario.yaml"))
		if err != nil {
			return nil, err
		}
		for _, s := range scenarios {
			files, err := scenario.ApproachFiles(s)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				spec, err := adapter.Load(f)
				if err != nil {
					return nil, err
				}
				out = append(out, pinned{scenario: s, approach: spec.Approach()})
			}
		}
	}
	return out, nil
}

func listTo(reg *impls.Registry, pins []pinned, asJSON bool, stdout io.Writer) int {
	if asJSON {
		type entry struct {
			Name         string             `json:"name"`
			Server       impls.Server       `json:"server"`
			Family       impls.Server       `json:"family"` // the same as server; kept for scripts that read it
			Capabilities impls.Capabilities `json:"capabilities"`
			Weaknesses   impls.Weaknesses   `json:"weaknesses"`
			Safe         bool               `json:"safe_without_faults"`
			Survives     string             `json:"survives"`
			Summary      string             `json:"summary"`
			Fails        string             `json:"fails"`
			Library      string             `json:"library,omitempty"`
			Scenario     string             `json:"scenario,omitempty"` // the regression scenario that runs it
		}
		var out []entry
		for _, a := range reg.All() {
			out = append(out, entry{a.Name, a.Server, a.Server, a.Caps, a.Weak, a.Safe, a.Survives, a.Summary, a.Fails, a.Library, ""})
		}
		for _, p := range pins {
			a := p.approach
			out = append(out, entry{a.Name, a.Server, a.Server, a.Caps, a.Weak, a.Safe, a.Survives, a.Summary, a.Fails, a.Library, p.scenario})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return exitOK
	}
	for _, g := range byServer(reg.All()) {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(stdout, "%s (%s)\n", strings.ToUpper(g.title), g.about)
		for _, a := range g.approaches {
			expected := "safe without faults"
			if !a.Safe {
				expected = "UNSAFE (negative control)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.Name, caps(a.Caps), expected)
			fmt.Fprintf(tw, "  \thow:\t%s\n", a.Summary)
			fmt.Fprintf(tw, "  \tsurvives:\t%s\n", a.Survives)
			fmt.Fprintf(tw, "  \tfails:\t%s\n", a.Fails)
		}
		tw.Flush()
		fmt.Fprintln(stdout)
	}
	if len(pins) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(stdout, "PINNED LIBRARY VERSIONS (the corpus of published lock bugs: locklab run SCENARIO)")
		for _, p := range pins {
			lib := p.approach.Library
			if lib == "" {
				lib = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.approach.Name, lib, p.approach.Server, p.scenario)
		}
		tw.Flush()
	}
	return exitOK
}

// serverGroup is the approaches of one server kind, as list prints them.
type serverGroup struct {
	title, about string
	approaches   []impls.Approach
}

// byServer groups approaches by server kind, in the kinds' order; those of
// no kind locklab runs come last, as "other".
func byServer(all []impls.Approach) []serverGroup {
	var out []serverGroup
	seen := map[impls.Server]bool{}
	for _, k := range cluster.Kinds() {
		seen[k.Server] = true
		g := serverGroup{title: string(k.Server), about: k.About}
		for _, a := range all {
			if a.Server == k.Server {
				g.approaches = append(g.approaches, a)
			}
		}
		if len(g.approaches) > 0 {
			out = append(out, g)
		}
	}
	other := serverGroup{title: "other", about: "servers locklab does not start"}
	for _, a := range all {
		if !seen[a.Server] {
			other.approaches = append(other.approaches, a)
		}
	}
	if len(other.approaches) > 0 {
		out = append(out, other)
	}
	return out
}

func caps(c impls.Capabilities) string {
	if names := c.Names(); len(names) > 0 {
		return strings.Join(names, ",")
	}
	return "-"
}

// listFaults prints every fault kind with its options and what it does to
// a lock holder.
func listFaults(asJSON bool, w io.Writer) {
	type entry struct {
		Fault   string   `json:"fault"`
		Threat  string   `json:"threat"`
		Options []string `json:"options"`
	}
	var out []entry
	for _, k := range chaos.Kinds() {
		f, _ := chaos.New(k)
		out = append(out, entry{k, f.Threat(), chaos.Options(f)})
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tTO A LOCK HOLDER\tOPTIONS")
	for _, e := range out {
		opts := strings.Join(e.Options, ", ")
		if opts == "" {
			opts = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Fault, e.Threat, opts)
	}
	tw.Flush()
}

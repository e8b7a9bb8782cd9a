package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
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
	if *faults {
		listFaults(*asJSON, out)
	} else if code := listTo(reg, *asJSON, out); code != exitOK {
		return code
	}
	if out.err != nil {
		fmt.Fprintf(stderr, "locklab list: write: %v\n", out.err)
		return exitInfra
	}
	return exitOK
}

func listTo(reg *impls.Registry, asJSON bool, stdout io.Writer) int {
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
		}
		var out []entry
		for _, a := range reg.All() {
			out = append(out, entry{a.Name, a.Server, a.Server, a.Caps, a.Weak, a.Safe, a.Survives, a.Summary, a.Fails})
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

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/impls"
)

func cmdList(reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list", stdout)
	asJSON := fs.Bool("json", false, "print as JSON")
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if *asJSON {
		type entry struct {
			Name         string             `json:"name"`
			Family       impls.Backend      `json:"family"`
			Capabilities impls.Capabilities `json:"capabilities"`
			Weaknesses   impls.Weaknesses   `json:"weaknesses"`
			Safe         bool               `json:"safe_without_faults"`
			Survives     string             `json:"survives"`
			Summary      string             `json:"summary"`
			Fails        string             `json:"fails"`
		}
		var out []entry
		for _, a := range reg.All() {
			out = append(out, entry{a.Name, a.Backend, a.Caps, a.Weak, a.Safe, a.Survives, a.Summary, a.Fails})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return exitOK
	}
	for _, fam := range []impls.Backend{impls.MySQL, impls.Redis, impls.ZooKeeper, impls.Etcd, impls.Postgres} {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(stdout, "%s\n", strings.ToUpper(string(fam)))
		for _, a := range reg.All() {
			if a.Backend != fam {
				continue
			}
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

func caps(c impls.Capabilities) string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{c.TTL, "ttl"}, {c.Reentrant, "reentrant"}, {c.Fair, "fair"}, {c.Blocking, "blocking"},
		{c.Fencing, "fencing"}, {c.FaultTolerant, "fault-tolerant"}, {c.Renewal, "renewal"}, {c.LossSignal, "loss-signal"},
		{c.FreedOnDisconnect, "freed-on-disconnect"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

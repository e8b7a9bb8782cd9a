package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/impls"
)

func cmdList(reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list", stdout)
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "APPROACH\tFAMILY\tCAPABILITIES\tEXPECTED\tHOW IT WORKS\tHOW IT FAILS")
	for _, a := range reg.All() {
		expected := "safe without faults"
		if !a.Safe {
			expected = "unsafe (negative control)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.Backend, caps(a.Caps), expected, a.Summary, a.Fails)
	}
	tw.Flush()
	return exitOK
}

func caps(c impls.Capabilities) string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{c.TTL, "ttl"}, {c.Reentrant, "reentrant"}, {c.Fair, "fair"}, {c.Blocking, "blocking"},
		{c.Fencing, "fencing"}, {c.FaultTolerant, "fault-tolerant"}, {c.Renewal, "renewal"}, {c.LossSignal, "loss-signal"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

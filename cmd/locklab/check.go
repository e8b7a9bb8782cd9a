package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/report"
)

const exitUndecided = 3 // the linearizability check hit its time limit

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", stdout)
	format := fs.String("format", "", "history format: jsonl or edn (default: by extension, .edn is EDN)")
	html := fs.String("html", "", "directory for porcupine's visualization of non-linearizable keys")
	timeline := fs.String("timeline", "", "write a timeline PNG of holder intervals to this file")
	timeLimit := fs.Duration("time-limit", 10*time.Second, "linearizability time limit per key")
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	linear := fs.Bool("linear", true, "check linearizability too (keeps every operation in memory)")
	if code := parseFlags(fs, reorderFlags(fs, args), stdout, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "locklab check: want one history file (locklab check FILE [--format jsonl|edn] [--html DIR])")
		return exitUsage
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "locklab check: %v\n", err)
		return exitUsage
	}
	defer f.Close()
	c := checker.New(*linear)
	var faults []report.Window
	var openFault *report.Window
	var last int64
	err = history.ReadFileFormat(f, *format, path, func(ev history.Event) error {
		c.Add(ev)
		last = max(last, ev.T)
		if ev.F == history.Nemesis {
			faults, openFault = nemesisWindow(ev, faults, openFault)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "locklab check: %s: %v\n", path, err)
		return exitUsage
	}
	v, err := c.Verdict(ctx, checker.Options{TimeLimit: *timeLimit, HTMLDir: *html})
	if err != nil {
		fmt.Fprintf(stderr, "locklab check: %v\n", err)
		return exitInterrupted
	}
	if openFault != nil {
		openFault.End = last
		faults = append(faults, *openFault)
	}
	if *timeline != "" {
		tl := &report.Timeline{Title: "holders of " + path, Origin: v.Origin, End: last, Intervals: c.Intervals(),
			Grants: v.DoubleGrants, Faults: faults}
		tl.ByKey = lanes(tl) > 64
		if err := report.PlotTimeline(*timeline, tl); err != nil {
			fmt.Fprintf(stderr, "locklab check: %v\n", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	} else {
		printVerdict(stdout, path, v)
	}
	switch {
	case len(v.Violations) > 0 || v.Linearizable == "no":
		return exitUnsafe
	case v.Linearizable == "unknown":
		return exitUndecided
	}
	return exitOK
}

// nemesisWindow turns fault events into windows: a window opens at an
// event whose value (or Jepsen :f) starts with "start" and closes at the
// next one starting with "stop".
func nemesisWindow(ev history.Event, faults []report.Window, open *report.Window) ([]report.Window, *report.Window) {
	what := strings.Trim(string(ev.Value), `"`)
	var v struct{ F, Fault string }
	if json.Unmarshal(ev.Value, &v) == nil && v.F != "" {
		what = v.F
	}
	switch {
	case strings.HasPrefix(what, "start") && open == nil:
		return faults, &report.Window{Start: ev.T, Label: v.Fault}
	case strings.HasPrefix(what, "stop") && open != nil && ev.Type != history.Invoke:
		open.End = ev.T
		return append(faults, *open), nil
	}
	return faults, open
}

func lanes(tl *report.Timeline) int {
	procs := map[int]bool{}
	for _, ivs := range tl.Intervals {
		for _, iv := range ivs {
			procs[iv.Proc] = true
		}
	}
	return len(procs)
}

func printVerdict(w io.Writer, path string, v checker.Verdict) {
	fmt.Fprintf(w, "%s: %d events, %d keys\n", path, v.Events, v.Keys)
	bad := 0
	for _, r := range v.Linear {
		if r.Result != porcupine.Ok {
			bad++
		}
	}
	for i, r := range v.Linear {
		if len(v.Linear) > 20 && r.Result == porcupine.Ok {
			continue // many keys: list only the failing ones
		}
		if i >= 200 {
			fmt.Fprintf(w, "  ... %d more keys\n", len(v.Linear)-i)
			break
		}
		switch r.Result {
		case porcupine.Ok:
			fmt.Fprintf(w, "  key %s: linearizable (%d operations, %v)\n", r.Key, r.Ops, r.Took.Round(time.Microsecond))
		case porcupine.Illegal:
			fmt.Fprintf(w, "  key %s: NOT linearizable (%d operations)", r.Key, r.Ops)
			if r.HTML != "" {
				fmt.Fprintf(w, ": see %s", r.HTML)
			}
			fmt.Fprintln(w)
		default:
			fmt.Fprintf(w, "  key %s: unknown (time limit hit after %v, %d operations)\n", r.Key, r.Took.Round(time.Millisecond), r.Ops)
		}
	}
	if len(v.Linear) > 20 {
		fmt.Fprintf(w, "  %d of %d keys linearizable\n", len(v.Linear)-bad, len(v.Linear))
	}
	for i, x := range v.Violations {
		if i == 50 {
			fmt.Fprintf(w, "  ... and %d more violations\n", len(v.Violations)-50)
			break
		}
		fmt.Fprintf(w, "  %s: %s\n", strings.ToUpper(x.Kind), x.Text)
	}
	if v.RefusedWrites > 0 {
		fmt.Fprintf(w, "  the fenced store refused %d stale requests\n", v.RefusedWrites)
	}
	switch {
	case len(v.Violations) > 0 || v.Linearizable == "no":
		fmt.Fprintf(w, "verdict: VIOLATION (%d violations, linearizable: %s)\n", len(v.Violations), v.Linearizable)
	case v.Linearizable == "unknown":
		fmt.Fprintln(w, "verdict: UNDECIDED (no violation found, but a linearizability check hit its time limit)")
	case v.Linearizable == "skipped":
		fmt.Fprintln(w, "verdict: OK (no double grant, no resource anomaly; linearizability not checked)")
	default:
		fmt.Fprintln(w, "verdict: OK (linearizable, no double grant, no resource anomaly)")
	}
}

// reorderFlags moves flags after the file name to the front, so that
// "locklab check FILE --html DIR" works as well as the other order.
// The flag set says which flags take a value.
func reorderFlags(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && takesValue(fs, a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		rest = append(rest, a)
	}
	return append(flags, rest...)
}

// takesValue reports whether flag a is followed by its value: not for
// boolean flags, nor for ones the set does not know (-h, typos).
func takesValue(fs *flag.FlagSet, a string) bool {
	f := fs.Lookup(strings.TrimLeft(a, "-"))
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

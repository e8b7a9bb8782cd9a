package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/report"
)

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", stdout)
	format := fs.String("format", "", "history format: jsonl (locklab's), edn or jepsen-json (Jepsen's); default: detected")
	html := fs.String("html", "", "directory for porcupine's visualization of non-linearizable keys")
	timeline := fs.String("timeline", "", "write a timeline of holder intervals to this file: a PNG, or with .html the page to zoom and hover (faults, leases, violations linked to their lines)")
	timeLimit := fs.Duration("time-limit", 10*time.Second, "time limit for drawing a failing key's visualization (the verdict itself is exact and needs none)")
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	linear := fs.Bool("linear", true, "check linearizability too (keeps every operation in memory)")
	modelName := fs.String("model", "", "what a tenure is: mutex (Knossos's: no expiry, a failed release never happened) or lease (a tenure ends at its release's invocation); "+
		"default: mutex for Jepsen's EDN and JSON, lease for locklab's JSONL")
	if code := parseFlags(fs, reorderFlags(fs, args), stdout, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "locklab check: want one history file (locklab check FILE [--model mutex|lease] [--format jsonl|edn] [--html DIR])")
		return exitUsage
	}
	path := fs.Arg(0)
	var stalls []report.Window // the lab's own, for the timeline
	page := strings.HasSuffix(strings.ToLower(*timeline), ".html")
	var at eventPlaces // for the page: where each event is
	o := checker.FileOptions{Path: path, Format: *format, Model: *modelName, ModelGiven: flagSet(fs, "model"),
		Linear: *linear, TimeLimit: *timeLimit, HTMLDir: *html, Visit: func(ev history.Event) {
			if page {
				at.add(ev)
			}
			if who, start, end, ok := history.ReadStall(ev); ok {
				stalls = append(stalls, report.Window{Start: start, End: end, Label: who})
			}
		}}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "locklab check: %v\n", err)
		return exitUsage
	}
	res, err := checker.CheckFile(ctx, o)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "locklab check: interrupted")
		return exitInterrupted
	}
	if err != nil {
		fmt.Fprintf(stderr, "locklab check: %v\n", err)
		return exitUsage
	}
	// The verdict is printed whatever happens to the files asked for
	// beside it; a file that could not be written is an error after it.
	v := res.Verdict
	var werr error
	if res.VisualizationErr != nil {
		werr = fmt.Errorf("visualization: %w", res.VisualizationErr)
	}
	if *timeline != "" {
		tl := &report.Timeline{Title: "holders of " + path, Origin: v.Origin, End: res.Loaded.Last, Intervals: res.Checker.Intervals(),
			Grants: v.DoubleGrants, Faults: report.Windows(history.FaultWindows(res.Loaded.Nemesis), res.Loaded.Last), Stalls: stalls}
		werr = errors.Join(werr, writeCheckTimeline(*timeline, page, path, tl, v, at))
	}
	werr = errors.Join(werr, printVerdict(stdout, path, v, *asJSON))
	if werr != nil {
		fmt.Fprintf(stderr, "locklab check: %v\n", strings.ReplaceAll(werr.Error(), "\n", "; "))
	}
	switch {
	case !v.Safe():
		return exitUnsafe // the verdict matters most to a gate
	case werr != nil:
		return exitInfra
	}
	return exitOK
}

// writeCheckTimeline draws tl to file: the page to zoom and hover, or a PNG.
func writeCheckTimeline(file string, page bool, path string, tl *report.Timeline, v checker.Verdict, at eventPlaces) error {
	if !page {
		return report.PlotTimeline(file, tl)
	}
	tl.Violations, tl.Event, tl.HistoryFile = v.Violations, at.at, path
	run := report.Run{Case: path, Approach: "model " + string(v.Model), Status: "unsafe", Explanation: fmt.Sprintf("%d violation(s)", len(v.Violations))}
	if v.Safe() {
		run.Status, run.Explanation = "safe", "no violation"
	}
	return report.WriteTimelinePage(file, report.CasePage(run, tl, []string{path}))
}

// printVerdict writes the verdict as JSON or words.
func printVerdict(stdout io.Writer, path string, v checker.Verdict, asJSON bool) error {
	out := &errWriter{w: stdout}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	} else {
		report.WriteVerdict(out, path, v, checkLimits)
	}
	if out.err != nil {
		return fmt.Errorf("write the verdict: %w", out.err)
	}
	return nil
}

// checkLimits: check lists every key up to 20 keys, at most 200, and
// describes up to 50 violations (a case's results keep 10).
var checkLimits = report.Limits{AllKeys: 20, Keys: 200, Violations: 50}

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

// eventPlaces are the events' times and processes by index, in the order
// read (a history's indices rise).
type eventPlaces struct {
	index, t []int64
	proc     []int
}

func (e *eventPlaces) add(ev history.Event) {
	e.index, e.t, e.proc = append(e.index, ev.Index), append(e.t, ev.T), append(e.proc, ev.Proc)
}

func (e *eventPlaces) at(i int64) (int64, int, bool) {
	k, ok := slices.BinarySearch(e.index, i)
	if !ok {
		return 0, 0, false
	}
	return e.t[k], e.proc[k], true
}

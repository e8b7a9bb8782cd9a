package main

import (
	"fmt"
	"io"

	"github.com/locklab/locklab/compare"
	"github.com/locklab/locklab/report"
)

// cmdCompare is `locklab compare BASELINE NEW`: two results folders (or
// results.json files) side by side, exit 1 when NEW regressed.
func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compare", stdout)
	bound := fs.String("max-regression", "15%", "how much throughput may fall, or acquire/hand-off p99 rise, before it is a regression")
	junit := fs.String("junit", "", "also write JUnit XML to this file: one test case per case of NEW, a regression as a failure")
	if code := parseFlags(fs, reorderFlags(fs, args), stdout, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "locklab compare: want two results: locklab compare BASELINE NEW (folders results/<run-id> or their results.json)")
		return exitUsage
	}
	limit, err := compare.ParseBound(*bound)
	if err != nil {
		fmt.Fprintf(stderr, "locklab compare: --max-regression %v\n", err)
		return exitUsage
	}
	var res [2]*report.Results
	for i := range res {
		if res[i], err = report.ReadResults(fs.Arg(i)); err != nil {
			fmt.Fprintf(stderr, "locklab compare: %v\n", err)
			return exitUsage
		}
	}
	cmp := compare.Compare(res[0], res[1], limit)
	out := &errWriter{w: stdout}
	compare.Print(out, cmp)
	code := exitOK
	switch {
	case out.err != nil:
		fmt.Fprintf(stderr, "locklab compare: write the comparison: %v\n", out.err)
		code = exitInfra
	case len(cmp.Rows) == 0:
		fmt.Fprintln(stderr, "locklab compare: no case in common: nothing compared")
		return exitUsage
	case cmp.Regressed():
		code = exitUnsafe
	}
	if *junit != "" {
		b, err := report.RunsJUnit("compare", res[1].Runs, cmp.ByCase())
		if err == nil {
			err = report.WriteFileAtomic(*junit, b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "locklab compare: %v\n", err)
			code = max(code, exitInfra)
		}
	}
	return code
}

package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// cmdConform is `locklab conform APPROACH[,APPROACH]`: the conformance
// suite on each approach, against real servers of its server kind, as
// each approach's package runs it under `go test`: what the approach
// declares must hold, and what it does not declare is skipped, saying so.
func cmdConform(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("conform", stdout)
	junit := fs.String("junit", "", "also write JUnit XML to this file: one test case per suite test (a skipped one says why)")
	match := fs.String("run", "", "run only the suite tests whose name (APPROACH/TestName) matches this regular expression")
	where := addClusterFlags(fs, "conform", true)
	files := addApproachFiles(fs)
	if code := parseFlags(fs, reorderFlags(fs, args), stdout, stderr); code >= 0 {
		return code
	}
	if code := files.register("conform", reg, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "locklab conform: want one argument: locklab conform APPROACH[,APPROACH] (see 'locklab list')")
		return exitUsage
	}
	var approaches []impls.Approach
	var kinds []impls.Server
	for _, name := range strings.Split(fs.Arg(0), ",") {
		a, err := reg.Get(strings.TrimSpace(name))
		if err != nil {
			fmt.Fprintf(stderr, "locklab conform: %v\n", err)
			return exitUsage
		}
		approaches = append(approaches, a)
		if !slices.Contains(kinds, a.Server) {
			kinds = append(kinds, a.Server)
		}
	}
	var filter func(string) bool
	if *match != "" {
		re, err := regexp.Compile(*match)
		if err != nil {
			fmt.Fprintf(stderr, "locklab conform: --run: %v\n", err)
			return exitUsage
		}
		filter = re.MatchString
	}
	ext, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	g := &gate{kind: "conform", junit: junit}
	cl, err := runner.StartServers(ctx, ext, docker, kinds)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", errInterrupted, err)
		}
		code := exitCode(stderr, err)
		if code == exitInfra {
			return g.unstarted(err, code, stderr)
		}
		return code
	}
	defer cl.Close()

	var all []conformance.Result
	var runErr error
	for _, a := range approaches {
		h, err := conformance.HarnessFor(cl, a)
		if err != nil {
			fmt.Fprintf(stderr, "locklab conform: %v\n", err)
			return exitInfra
		}
		fmt.Fprintf(stdout, "=== %s (%s)\n", a.Name, a.Server)
		s := &conformance.Standalone{Match: filter, Report: func(r conformance.Result) { printResult(stdout, r) }}
		start := time.Now()
		rs, err := s.Run(ctx, a.Name, func(t conformance.T) { conformance.RunT(t, h) })
		all = append(all, rs...)
		if err != nil {
			runErr = err
			break
		}
		fmt.Fprintf(stdout, "%s: %s in %.1fs\n\n", a.Name, countResults(rs), time.Since(start).Seconds())
	}
	if *junit != "" {
		if err := writeConformJUnit(*junit, all); err != nil {
			fmt.Fprintf(stderr, "locklab conform: %v\n", err)
			if runErr == nil {
				return exitInfra
			}
		}
	}
	if runErr != nil {
		return exitCode(stderr, fmt.Errorf("%w: %w", errInterrupted, runErr))
	}
	ran := suiteTests(all)
	if len(ran) == 0 {
		fmt.Fprintf(stderr, "locklab conform: --run %q matches no test\n", *match)
		return exitUsage
	}
	if len(approaches) > 1 {
		fmt.Fprintf(stdout, "conform: %s\n", countResults(all))
	}
	var failed []string
	for _, r := range ran {
		if r.Status == conformance.Failed {
			failed = append(failed, r.Name)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "locklab conform: %d test(s) failed: %s\n", len(failed), strings.Join(failed, ", "))
		return exitUnsafe
	}
	return exitOK
}

// suiteTests are the results that stand for a test of the suite: those
// under an approach without subtests, and a test that failed by itself
// (the approach's harness, say), so no failure goes unreported. An
// approach whose tests --run filtered out is none.
func suiteTests(rs []conformance.Result) []conformance.Result {
	var out []conformance.Result
	for _, r := range rs {
		if isSuiteTest(r) {
			out = append(out, r)
		}
	}
	return out
}

func isSuiteTest(r conformance.Result) bool {
	return r.OwnFailure || r.Subtests == 0 && strings.Contains(r.Name, "/")
}

// printResult is one line per suite test, with what it logged below it:
// a skip with its reason on the same line.
func printResult(w io.Writer, r conformance.Result) {
	if !isSuiteTest(r) {
		return
	}
	if r.Status == conformance.Skipped {
		fmt.Fprintf(w, "SKIP  %s: %s\n", r.Name, strings.Join(r.Output, "; "))
		return
	}
	fmt.Fprintf(w, "%s  %s (%.2fs)\n", r.Status, r.Name, r.Elapsed.Seconds())
	for _, line := range r.Output {
		for _, l := range strings.Split(line, "\n") {
			fmt.Fprintf(w, "        %s\n", l)
		}
	}
}

// countResults is "12 passed, 1 failed, 9 skipped".
func countResults(rs []conformance.Result) string {
	n := map[conformance.Status]int{}
	for _, r := range suiteTests(rs) {
		n[r.Status]++
	}
	return fmt.Sprintf("%d passed, %d failed, %d skipped", n[conformance.Passed], n[conformance.Failed], n[conformance.Skipped])
}

// writeConformJUnit writes one test case per suite test, its class the
// approach: a failure with what the test said, a skip with its reason.
func writeConformJUnit(path string, rs []conformance.Result) error {
	j := report.NewJUnit("locklab conform")
	for _, r := range suiteTests(rs) {
		approach, test, ok := strings.Cut(r.Name, "/")
		if !ok {
			test = approach
		}
		class := "locklab.conform." + approach
		switch r.Status {
		case conformance.Failed:
			msg := "failed"
			if len(r.Output) > 0 {
				msg, _, _ = strings.Cut(r.Output[0], "\n")
			}
			j.Fail(class, test, r.Elapsed.Seconds(), msg, strings.Join(r.Output, "\n"))
		case conformance.Skipped:
			j.Skip(class, test, strings.Join(r.Output, "; "))
		default:
			j.Pass(class, test, r.Elapsed.Seconds())
		}
	}
	b, err := j.XML()
	if err != nil {
		return err
	}
	if err := report.WriteFileAtomic(path, b); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}

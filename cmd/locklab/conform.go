package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	approaches, err := conformance.Lookup(reg, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "locklab conform: %v\n", err)
		return exitUsage
	}
	o := conformance.Options{Approaches: approaches, Match: *match}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "locklab conform: %v\n", err)
		return exitUsage
	}
	ext, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	g := &gate{kind: "conform", junit: junit}
	cl, err := runner.StartServers(ctx, ext, docker, o.Servers())
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
	all, runErr := o.Run(ctx, cl, conformProgress(stdout))
	if herr := (*conformance.HarnessError)(nil); errors.As(runErr, &herr) {
		fmt.Fprintf(stderr, "locklab conform: %v\n", herr)
		return exitInfra
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
	return conformExit(stdout, stderr, o, all)
}

// conformProgress prints each approach's tests as they end and a count
// after them.
func conformProgress(stdout io.Writer) conformance.Progress {
	return conformance.Progress{
		Begin:  func(a impls.Approach) { fmt.Fprintf(stdout, "=== %s (%s)\n", a.Name, a.Server) },
		Result: func(r conformance.Result) { printResult(stdout, r) },
		End: func(a impls.Approach, rs []conformance.Result, took time.Duration) {
			fmt.Fprintf(stdout, "%s: %s in %.1fs\n\n", a.Name, conformance.Count(rs), took.Seconds())
		},
	}
}

// conformExit maps the results to an exit code: a --run that matched no
// test is a usage error, a failed test unsafe.
func conformExit(stdout, stderr io.Writer, o conformance.Options, all []conformance.Result) int {
	if len(conformance.SuiteTests(all)) == 0 {
		fmt.Fprintf(stderr, "locklab conform: --run %q matches no test\n", o.Match)
		return exitUsage
	}
	if len(o.Approaches) > 1 {
		fmt.Fprintf(stdout, "conform: %s\n", conformance.Count(all))
	}
	if failed := conformance.Failures(all); len(failed) > 0 {
		fmt.Fprintf(stderr, "locklab conform: %d test(s) failed: %s\n", len(failed), strings.Join(failed, ", "))
		return exitUnsafe
	}
	return exitOK
}

// printResult is one line per suite test, with what it logged below it:
// a skip with its reason on the same line.
func printResult(w io.Writer, r conformance.Result) {
	if !r.IsSuiteTest() {
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

// writeConformJUnit writes one test case per suite test, its class the
// approach: a failure with what the test said, a skip with its reason.
func writeConformJUnit(path string, rs []conformance.Result) error {
	j := report.NewJUnit("locklab conform")
	for _, r := range conformance.SuiteTests(rs) {
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

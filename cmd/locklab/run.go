package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
)

// cmdRun is `locklab run SCENARIO.yaml`: one case per approach of the
// scenario, with its faults on their schedule, each judged against what
// the scenario expects.
func cmdRun(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stdout)
	var approaches listFlag
	fs.Var(&approaches, "approach", "comma-separated approaches: run only these of the scenario's")
	seed := fs.Uint64("seed", 0, "override the scenario's seed (the same seed gives the same fault timeline)")
	duration := fs.Duration("duration", 0, "override the scenario's duration (repeating faults repeat for longer)")
	results := fs.String("results", "results", "directory for results/<run-id>/")
	where := addClusterFlags(fs, "run", true)
	runs := fs.Int("runs", 1, "run each approach's case this many times (run i with seed+i) and count how many agree")
	parallel := fs.Int("parallel", 0, "with --runs: run up to this many cases at once, those of different server kinds side by side (as matrix does); 0: one at a time")
	need := fs.Int("need", 0, "with --runs: exit 0 when at least this many runs of each approach agree, and none shows a violation it was not expected to (default: all)")
	stalls := addStallFlag(fs)
	g := gateFlags(fs, "run", false)
	files := addApproachFiles(fs)
	if code := parseFlags(fs, reorderFlags(fs, args), stdout, stderr); code >= 0 {
		return code
	}
	if code := files.register("run", reg, stderr); code >= 0 {
		return code
	}
	if code := g.load(stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "locklab run: want one scenario file: locklab run SCENARIO.yaml (see scenarios/)")
		return exitUsage
	}
	if code := registerScenarioFiles("run", reg, fs.Arg(0), stderr); code >= 0 {
		return code
	}
	ext, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	s, err := scenario.Load(fs.Arg(0), reg)
	if err != nil {
		fmt.Fprintf(stderr, "locklab run: %v\n", err)
		return exitUsage
	}
	if *duration < 0 {
		fmt.Fprintf(stderr, "locklab run: --duration %v: must be positive\n", *duration)
		return exitUsage
	}
	if *runs < 1 || *runs > 1000 {
		fmt.Fprintf(stderr, "locklab run: --runs %d: want 1..1000\n", *runs)
		return exitUsage
	}
	if *need < 0 || *need > *runs {
		fmt.Fprintf(stderr, "locklab run: --need %d: want 0..%d (--runs)\n", *need, *runs)
		return exitUsage
	}
	if *parallel < 0 {
		fmt.Fprintf(stderr, "locklab run: --parallel %d: must not be negative\n", *parallel)
		return exitUsage
	}
	g.need = *need
	opt := runner.ScenarioOptions{Approaches: approaches, ResultsDir: *results, External: ext, Docker: docker, Duration: *duration, Runs: *runs}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			opt.Seed = seed
		}
	})
	plan, err := runner.ScenarioPlan(reg, s, opt)
	if err != nil {
		return exitCode(stderr, err)
	}
	if code := stalls.apply("run", &plan, stderr); code >= 0 {
		return code
	}
	if s.Description != "" {
		fmt.Fprintf(stdout, "%s: %s\n\n", s.Name, firstParagraph(s.Description))
	}
	return runPlan(ctx, plan, g, *parallel, args, stdout, stderr)
}

// firstParagraph is a scenario's description up to its first blank line,
// on one line.
func firstParagraph(s string) string {
	para, _, _ := strings.Cut(s, "\n\n")
	return strings.Join(strings.Fields(para), " ")
}

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// cmdExplore is `locklab explore`: generated fault schedules, case after
// case until the budget is spent, each violation told known or new by the
// matrix's rules and shrunk to a scenario file. Exit 1 when a new one was
// found.
func cmdExplore(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explore", stdout)
	var approaches, faults listFlag
	fs.Var(&approaches, "approach", "comma-separated approaches to explore (built-in, or from --approach-file)")
	fs.Var(&faults, "faults", "comma-separated fault kinds to compose (default: every kind the approach's servers and clients can take)")
	budget := fs.Duration("budget", 10*time.Minute, "how long to search, shrinking included; kept within 10%")
	seed := fs.Uint64("seed", 1, "seed of the schedules: the same seed gives the same sequence for the same observations")
	steer := fs.Bool("steer", true, "favour schedules that reached rarely seen lock-state transitions (false: seeded dice only)")
	runs := fs.Int("runs", 3, "runs that decide a shrink candidate: it is kept only if most of them show the violation")
	stopAfter := fs.Int("stop-after-new", 0, "end the search once this many new findings are confirmed and shrunk; 0: search the whole budget")
	parallel := fs.Int("parallel", explore.DefaultParallel(), "cases side by side (exploring runs, and the runs deciding a shrink candidate); 1: one at a time")
	results := fs.String("results", "results", "directory for results/<run-id>/ (found/*.yaml in it)")
	junit := fs.String("junit", "", "also write JUnit XML: one test case per finding, a new one failing")
	verbose := fs.Bool("verbose", false, "print the runner's warnings too (a fault that found no target, ...)")
	where := addClusterFlags(fs, "explore", true)
	files := addApproachFiles(fs)
	shards := addShardFlag(fs, "the search (at least N approaches: each shard its share of them; fewer: each shard all of them under seeds of its own)")
	if code := parseFlags(fs, reorderFlags(fs, args), stdout, stderr); code >= 0 {
		return code
	}
	if code := files.register("explore", reg, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locklab explore: unexpected argument %q (approaches go in --approach)\n", fs.Arg(0))
		return exitUsage
	}
	cfg := explore.Config{Registry: reg, Approaches: approaches, Faults: faults, Budget: *budget, Seed: *seed, Steer: *steer,
		ResultsDir: *results, Runs: *runs, Parallel: *parallel, StopAfterNew: *stopAfter, Command: "locklab explore " + strings.Join(args, " ")}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "locklab explore: %v\n", err)
		return exitUsage
	}
	var code int
	if cfg.External, cfg.Docker, code = where.resolve(ctx, stderr); code >= 0 {
		return code
	}
	rec, code := shardExplore(&cfg, shards, stderr)
	if code >= 0 {
		return code
	}
	// The matrix as shipped, against the built-in approaches: an approach
	// from a file is judged by the rules its capabilities match.
	var err error
	if cfg.Expect, err = matrix.ShippedFor(all.Registry()); err != nil {
		fmt.Fprintf(stderr, "locklab explore: %v\n", err)
		return exitUsage
	}
	cfg.Runner = &runner.Runner{Log: func(f string, a ...any) {
		if *verbose || !strings.HasPrefix(f, "warning:") {
			fmt.Fprintf(stderr, f+"\n", a...)
		}
	}}
	progress, done := exploreProgress(stderr)
	cfg.Progress = progress
	res, err := explore.Run(ctx, cfg)
	done()
	return exploreExit(ctx, res, err, rec, junit, stdout, stderr)
}

// exploreProgress shows where the exploration stands: on a terminal, one
// line redrawn with the running case's clock (done clears it); elsewhere, a
// line each time it turns to something else.
func exploreProgress(stderr io.Writer) (progress func(explore.Progress), done func()) {
	terminal := isTerminal(stderr)
	last := ""
	progress = func(p explore.Progress) {
		line := fmt.Sprintf("[%d runs, %d shrinking; %d findings, %d new; %v left] %s", p.Runs, p.ShrinkRuns, p.Findings, p.New,
			p.Left.Round(time.Second), p.Doing)
		switch {
		case terminal:
			if p.Case.Duration > 0 {
				line += fmt.Sprintf(" %.1fs/%v", p.Case.Elapsed.Seconds(), p.Case.Duration)
			}
			fmt.Fprintf(stderr, "\r\033[K%.200s", line)
		case p.Doing != last:
			fmt.Fprintln(stderr, line)
		}
		last = p.Doing
	}
	done = func() {
		if terminal {
			fmt.Fprint(stderr, "\r\033[K")
		}
	}
	return progress, done
}

// exploreExit prints what the exploration found and where it is kept,
// writes the JUnit file asked for, and returns the exit code: 1 when a new
// class of violation was found; a shard's, once its share ran.
func exploreExit(ctx context.Context, res *explore.Result, err error, rec *shardRecord, junit *string, stdout, stderr io.Writer) int {
	if res == nil || res.Dir == "" {
		// Nothing ran: refused, or the servers never came up.
		if ctx.Err() != nil && err != nil {
			err = fmt.Errorf("%w: %w", errInterrupted, err)
		}
		code := exitCode(stderr, err)
		if code == exitInfra {
			g := &gate{kind: "explore", junit: junit}
			return g.unstarted(err, code, stderr)
		}
		return code
	}
	if perr := res.Print(stdout); perr != nil {
		fmt.Fprintf(stderr, "locklab explore: %v\n", perr)
		return exitInfra
	}
	fmt.Fprintf(stdout, "results: %s\n", res.Dir)
	if code := rec.finishExplore(res.Dir, err, stderr); code >= 0 {
		return code
	}
	if *junit != "" {
		if jerr := res.WriteJUnit(*junit); jerr != nil {
			fmt.Fprintf(stderr, "locklab explore: %v\n", jerr)
			if err == nil {
				return exitInfra
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", errInterrupted, err)
		}
		return exitCode(stderr, err)
	}
	if n := res.New(); n > 0 {
		fmt.Fprintf(stderr, "locklab explore: %d new class(es) of violation\n", n)
		return exitUnsafe
	}
	return exitOK
}

// finishExplore finishes a shard's exploration that ran to its end (runErr
// nil); it returns the exit code, or -1 when not a shard or cut short.
func (r *shardRecord) finishExplore(dir string, runErr error, stderr io.Writer) int {
	if r == nil || runErr != nil {
		return -1
	}
	saved, err := report.ReadResults(dir)
	if err != nil {
		fmt.Fprintf(stderr, "locklab explore: %v\n", err)
		return exitInfra
	}
	return r.finish(dir, saved, stderr)
}

// shardExplore narrows the exploration to the shard --shard asks for
// (explore.Config.Shard) and says which: it returns the record its results
// keep (nil: not sharded), or an exit code >= 0.
func shardExplore(cfg *explore.Config, f shardFlag, stderr io.Writer) (*shardRecord, int) {
	spec, sharded, code := f.spec("explore", stderr)
	if !sharded {
		return nil, code
	}
	plan, err := cfg.Identity()
	if err != nil {
		fmt.Fprintf(stderr, "locklab explore: %v\n", err)
		return nil, exitInfra
	}
	how, err := cfg.Shard(spec)
	if err != nil {
		fmt.Fprintf(stderr, "locklab explore: --shard %v\n", err)
		return nil, exitUsage
	}
	rec := &shardRecord{Kind: "explore", Title: "explore", Plan: plan, K: spec.K, N: spec.N, Command: cfg.Command,
		Explore: &exploreShard{Seed: cfg.Seed, Approaches: cfg.Approaches}}
	fmt.Fprintf(stderr, "locklab explore: shard %v (plan %s): %s: %s, seed %d\n", spec, rec.Plan, how, strings.Join(cfg.Approaches, ", "), cfg.Seed)
	return rec, -1
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"github.com/locklab/locklab/shard"
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
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "locklab explore: unexpected argument %q (approaches go in --approach)\n", fs.Arg(0))
		return exitUsage
	case len(approaches) == 0:
		fmt.Fprintf(stderr, "locklab explore: --approach: which approach to explore (known: %s)\n", strings.Join(reg.Names(), ", "))
		return exitUsage
	case *budget <= 0:
		fmt.Fprintf(stderr, "locklab explore: --budget %v: must be positive\n", *budget)
		return exitUsage
	case *runs < 1 || *runs > 15:
		fmt.Fprintf(stderr, "locklab explore: --runs %d: want 1..15\n", *runs)
		return exitUsage
	case *parallel < 1 || *parallel > 64:
		fmt.Fprintf(stderr, "locklab explore: --parallel %d: want 1..64\n", *parallel)
		return exitUsage
	}
	ext, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	rec, code := shardExplore(&approaches, seed, exploreIdentity{approaches, faults, *budget, *seed, *steer, *runs}, shards, args, stderr)
	if code >= 0 {
		return code
	}
	// The matrix as shipped, against the built-in approaches: an approach
	// from a file is judged by the rules its capabilities match.
	m, err := matrix.Load(matrix.Shipped, all.Registry())
	if err != nil {
		fmt.Fprintf(stderr, "locklab explore: %v\n", err)
		return exitUsage
	}
	r := &runner.Runner{Log: func(f string, a ...any) {
		if *verbose || !strings.HasPrefix(f, "warning:") {
			fmt.Fprintf(stderr, f+"\n", a...)
		}
	}}
	cfg := explore.Config{Registry: reg, Approaches: approaches, Faults: faults, Budget: *budget, Seed: *seed, Steer: *steer,
		Expect: matrix.NewExpectations(m, all.Registry()), ResultsDir: *results, External: ext, Docker: docker, Runner: r,
		Runs: *runs, Parallel: *parallel, Command: "locklab explore " + strings.Join(args, " ")}
	terminal := isTerminal(stderr)
	last := ""
	cfg.Progress = func(p explore.Progress) {
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
	res, err := explore.Run(ctx, cfg)
	if terminal {
		fmt.Fprint(stderr, "\r\033[K")
	}
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
	if res.Dir != "" {
		fmt.Fprintf(stdout, "results: %s\n", res.Dir)
	}
	if code := rec.finishExplore(res.Dir, err, stderr); code >= 0 {
		return code
	}
	if *junit != "" {
		b, jerr := res.JUnit()
		if jerr == nil {
			jerr = report.WriteFileAtomic(*junit, b)
		}
		if jerr != nil {
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

// exploreIdentity is what makes an exploration the one it is, whatever its
// shard: shards of one have the same.
type exploreIdentity struct {
	Approaches, Faults []string
	Budget             time.Duration
	Seed               uint64
	Steer              bool
	Runs               int
}

// exploreSeedStride parts the seeds of shards exploring the same
// approaches: shard K's first is the seed plus (K-1) strides, far past the
// seed plus the approach's index an exploration gives each approach.
const exploreSeedStride = 1 << 32

// shardExplore narrows an exploration to shard --shard asks for: with at
// least N approaches, the shard's share of them (by name), under the
// seed; with fewer, all of them under a seed of the shard's own. It
// returns the record its results keep (nil: not sharded), or an exit code
// >= 0.
func shardExplore(approaches *listFlag, seed *uint64, id exploreIdentity, f shardFlag, args []string, stderr io.Writer) (*shardRecord, int) {
	spec, sharded, code := f.spec("explore", stderr)
	if !sharded {
		return nil, code
	}
	b, err := json.Marshal(id)
	if err != nil {
		fmt.Fprintf(stderr, "locklab explore: %v\n", err)
		return nil, exitInfra
	}
	sum := sha256.Sum256(b)
	rec := &shardRecord{Kind: "explore", Title: "explore", Plan: hex.EncodeToString(sum[:12]), K: spec.K, N: spec.N,
		Command: "locklab explore " + strings.Join(args, " ")}
	how := "its share of the approaches"
	if len(*approaches) >= spec.N {
		items := make([]shard.Item, len(*approaches))
		for i, a := range *approaches {
			items[i] = shard.Item{Key: a, Cost: id.Budget}
		}
		mine, err := shard.Pick(items, spec)
		if err != nil {
			fmt.Fprintf(stderr, "locklab explore: --shard %v\n", err)
			return nil, exitUsage
		}
		var picked listFlag
		for _, i := range mine {
			picked = append(picked, (*approaches)[i])
		}
		*approaches = picked
	} else {
		*seed += uint64(spec.K-1) * exploreSeedStride
		how = fmt.Sprintf("every approach, under seeds of its own from %d", *seed)
	}
	rec.Explore = &exploreShard{Seed: *seed, Approaches: *approaches}
	fmt.Fprintf(stderr, "locklab explore: shard %v (plan %s): %s: %s, seed %d\n", spec, rec.Plan, how, strings.Join(*approaches, ", "), *seed)
	return rec, -1
}

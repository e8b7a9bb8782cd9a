package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

func cmdBench(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", stdout)
	approaches := listFlag(reg.Names())
	clients := intsFlag{1, 8, 32}
	fs.Var(&approaches, "approaches", "comma-separated lock approaches (see 'locklab list')")
	fs.Var(alias{&approaches}, "backends", "deprecated: the same as --approaches")
	fs.Var(&clients, "clients", "comma-separated client counts; each count is one case per approach")
	duration := fs.Duration("duration", 5*time.Second, "how long each run lasts")
	keys := fs.Int("keys", 1, "number of lock keys the clients contend for")
	hold := fs.String("hold", "0", "hold time: 2ms, uniform:1ms-5ms or exp:2ms")
	ttl := fs.Duration("ttl", 10*time.Second, "lease TTL for approaches with expiry")
	acquireTimeout := fs.Duration("acquire-timeout", 10*time.Second, "how long one acquire may wait")
	seed := fs.Uint64("seed", 1, "random seed for key choice and hold times")
	results := fs.String("results", "results", "directory for results/<run-id>/")
	where := addClusterFlags(fs, "bench", true)
	viaProxy := fs.Bool("via-proxy", false, "connect clients through the fault-injecting proxies (about 0.1 ms more per round trip), as runs with network faults do")
	fs.Bool("direct", true, "deprecated: clients connect straight to the servers by default")
	kind := fs.String("workload", "mutex", "what holders do: mutex (hold only), counter (read-modify-write a balance in a store), tasks (claim tasks, each once)")
	fenced := fs.Bool("fenced", false, "the store refuses writes with a fencing token older than one it accepted")
	processes := fs.Bool("processes", false, "run each client as its own process (as chaos runs that pause or kill clients do)")
	noHistory := fs.Bool("no-history", false, "record and check nothing (to measure what recording costs)")
	rate := fs.Float64("rate", 0, "open loop: lock requests per second over all clients, latency counted from when each was due (0: each client asks again as soon as it released)")
	stalls := addStallFlag(fs)
	g := gateFlags(fs, "bench", true)
	files := addApproachFiles(fs)
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if code := files.register("bench", reg, stderr); code >= 0 {
		return code
	}
	if !flagSet(fs, "approaches") && !flagSet(fs, "backends") {
		approaches = listFlag(reg.Names()) // with the files' approaches
	}
	if code := g.load(stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locklab bench: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	cfg := runner.BenchConfig{
		Approaches: approaches, Clients: clients, ResultsDir: *results, Direct: !*viaProxy, NoHistory: *noHistory, Processes: *processes,
		Workload: workload.Spec{Kind: *kind, Duration: *duration, Keys: *keys, TTL: *ttl,
			AcquireTimeout: *acquireTimeout, Seed: *seed, Fenced: *fenced, Rate: *rate},
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "locklab bench: %v\n", err)
		return exitUsage
	}
	var err error
	if cfg.Workload.Hold, err = workload.ParseDist(*hold); err != nil {
		fmt.Fprintf(stderr, "locklab bench: --hold: %v\n", err)
		return exitUsage
	}
	ext, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	cfg.External, cfg.Docker = ext, docker
	plan, err := runner.BenchPlan(reg, cfg)
	if err != nil {
		return exitCode(stderr, err)
	}
	if code := stalls.apply("bench", &plan, stderr); code >= 0 {
		return code
	}
	return runPlan(ctx, plan, g, 0, args, stdout, stderr)
}

// runPlan runs a plan with progress on a terminal, prints the table and
// each case's verdict, and returns the exit code its outcomes call for.
// parallel > 0 runs up to that many cases at once, those of different
// server kinds side by side; 0 runs them one at a time.
// With --shard, it runs the shard's cases (args: the command line, which
// the shard's record keeps): the record goes into the results folder, and
// the verdict is the merge's.
func runPlan(ctx context.Context, plan runner.Plan, g *gate, parallel int, args []string, stdout, stderr io.Writer) int {
	rec, code := shardPlan(&plan, g.kind, g.shard, args, stderr)
	switch {
	case code >= 0:
		return code
	case rec != nil && g.base != nil:
		fmt.Fprintf(stderr, "locklab %s: --baseline goes with an unsharded run: compare the merged folder (locklab compare BASELINE MERGED)\n", g.kind)
		return exitUsage
	case rec != nil:
		rec.Need = g.need
	}
	r := &runner.Runner{Log: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }, Parallel: parallel > 0, MaxCases: parallel}
	if isTerminal(stdout) {
		r.Progress = func(s runner.Status) {
			fmt.Fprintf(stdout, "\r\033[K[%d/%d] %s: %4.1fs/%v, %d acquired",
				s.Step, s.Steps, s.Case, s.Elapsed.Seconds(), s.Duration, s.Acquired)
		}
	}
	out, err := r.Run(ctx, plan)
	if r.Progress != nil {
		fmt.Fprint(stdout, "\r\033[K")
	}
	if out != nil {
		report.PrintRuns(stdout, out.Results.Runs)
	}
	if out != nil {
		fmt.Fprintf(stdout, "results: %s\n", out.Dir)
	}
	if rec != nil && out != nil {
		if werr := rec.write(out.Dir, out.Results); werr != nil {
			fmt.Fprintf(stderr, "locklab %s: %v\n", rec.Kind, werr)
			return exitInfra
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			// Whatever failed, a Ctrl-C caused it: a server start cut
			// short reads like a server error, and is not one.
			err = fmt.Errorf("%w: %w", errInterrupted, err)
		}
		code := exitCode(stderr, err)
		if out != nil {
			// What ran still goes into the JUnit file; no comparison of
			// a run cut short.
			g.base = nil
			return g.finish(out.Results, code, stdout, stderr)
		}
		if code == exitInfra {
			return g.unstarted(err, code, stderr)
		}
		return code
	}
	if rec != nil {
		rec.leaveVerdict(stderr)
		return g.finish(out.Results, exitOK, stdout, stderr)
	}
	if plan.Repeats > 1 {
		return g.finish(out.Results, exitForRepeats(out.Results.Runs, out.Verdicts, g.need, stdout, stderr), stdout, stderr)
	}
	return g.finish(out.Results, exitFor(out.Verdicts, stderr), stdout, stderr)
}

// shardPlan narrows plan to the shard --shard asks for, if any: it returns
// the record its results keep (nil: not sharded), or an exit code >= 0.
func shardPlan(plan *runner.Plan, kind string, f shardFlag, args []string, stderr io.Writer) (*shardRecord, int) {
	spec, sharded, code := f.spec(kind, stderr)
	if !sharded {
		return nil, code
	}
	whole := len(plan.Cases)
	rec, err := takeShard(plan, kind, spec)
	if err != nil {
		fmt.Fprintf(stderr, "locklab %s: --shard %v\n", kind, err)
		return nil, exitUsage
	}
	rec.Command = "locklab " + kind + " " + strings.Join(args, " ")
	fmt.Fprintf(stderr, "locklab %s: shard %v: %d of the plan's %d cases (plan %s)\n", kind, spec, len(plan.Cases), whole, rec.Plan)
	return rec, -1
}

// exitForRepeats is the gate over repeated runs (run --runs N): it prints,
// per approach, how many runs agreed with the expectation, and judges them
// by verdict.Policy: at least need of them must agree (0: all), a miss of
// an expected violation is tolerated down to need, a violation not
// expected never.
func exitForRepeats(runs []report.Run, vs []verdict.Result, need int, stdout, stderr io.Writer) int {
	approaches := make([]string, len(runs))
	for i, r := range runs {
		approaches[i] = r.Approach
	}
	var statuses []verdict.Status
	for _, named := range verdict.TallyBy(approaches, vs) {
		a, t := named.Name, named.Tally
		fmt.Fprintf(stdout, "%s: as expected in %d of %d runs (missed the expected outcome %d, contradicted %d, undecided %d)\n",
			a, t.Agreed, t.Runs, t.Missed, t.Contradicted, t.Undecided)
		p := verdict.Policy{Need: need}
		n := p.Needed(t.Runs)
		st := t.Status(p)
		switch {
		case st == verdict.Contradicts && t.Contradicted > 0:
			fmt.Fprintf(stderr, "locklab: %s: %d run(s) showed a violation not expected\n", a, t.Contradicted)
		case st == verdict.Contradicts:
			fmt.Fprintf(stderr, "locklab: %s: %d of %d runs agreed, %d needed\n", a, t.Agreed, t.Runs, n)
		case st == verdict.Undecided:
			fmt.Fprintf(stderr, "locklab: %s: %d of %d runs agreed, %d needed (%d undecided)\n", a, t.Agreed, t.Runs, n, t.Undecided)
		}
		statuses = append(statuses, st)
	}
	return exitForStatuses(statuses)
}

// exitForStatuses maps statuses to the exit code: a contradiction
// outranks an undecided case, which a gate never passes.
func exitForStatuses(statuses []verdict.Status) int {
	switch {
	case slices.Contains(statuses, verdict.Contradicts):
		return exitUnsafe
	case slices.Contains(statuses, verdict.Undecided):
		return exitUndecided
	}
	return exitOK
}

// exitFor is the CI gate: 0 when every case behaved as expected, 1 when one
// contradicted its expectation, 4 when one could not be verified (a gate
// never passes what it did not check).
func exitFor(vs []verdict.Result, stderr io.Writer) int {
	var bad, undecided []string
	statuses := make([]verdict.Status, len(vs))
	for i, v := range vs {
		statuses[i] = v.Status
		switch v.Status {
		case verdict.Contradicts:
			bad = append(bad, v.Text)
		case verdict.Undecided:
			undecided = append(undecided, v.Text)
		}
	}
	switch {
	case len(bad) > 0:
		fmt.Fprintf(stderr, "locklab: %d case(s) contradict their expectation: %s\n", len(bad), strings.Join(bad, "; "))
	case len(undecided) > 0:
		fmt.Fprintf(stderr, "locklab: %d case(s) could not be verified: %s\n", len(undecided), strings.Join(undecided, "; "))
	}
	return exitForStatuses(statuses)
}

// isTerminal reports whether w is a terminal, for the progress display.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

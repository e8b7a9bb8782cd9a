package main

import (
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// cmdMatrix is `locklab matrix`: every approach against every fault, each
// applicable cell run N times, expected versus observed.
func cmdMatrix(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("matrix", stdout)
	var approaches, faults listFlag
	fs.Var(&approaches, "approaches", "comma-separated approaches (rows); default: all")
	fs.Var(&faults, "faults", "comma-separated faults (columns); default: all (see matrix/expectations.yaml)")
	runs := fs.Int("runs", 3, "runs per cell")
	which := fs.String("cells", "all", "which applicable cells to run: all, unsafe (those that expect a violation: a catch-rate pass) or safe")
	minCatch := fs.Float64("min-catch-rate", 0, "a cell that expects a violation must show it in at least this share of its runs (e.g. 0.95); 0: in one run")
	seed := fs.Uint64("seed", 1, "seed of the first run (run i uses seed+i)")
	budget := fs.Duration("budget", 0, "stop after this long (what ran is kept and reported); 0: no limit")
	results := fs.String("results", "results", "directory for results/<run-id>/")
	junit := fs.String("junit", "", "also write JUnit XML (one test case per cell) to this file")
	sequential := fs.Bool("sequential", false, "run one cell at a time (by default, cells of different server kinds run side by side)")
	parallel := fs.Int("parallel", 0, fmt.Sprintf("at most this many cases at once when cells run side by side; 0: six per CPU (%d here)", runner.DefaultMaxCases()))
	where := addClusterFlags(fs, "matrix", false)
	dir := fs.String("matrix", "", "a directory with expectations.yaml and faults/*.yaml to use instead of the built-in matrix")
	files := addApproachFiles(fs)
	stalls := addStallFlag(fs)
	shards := addShardFlag(fs, "the matrix's runs")
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if code := files.register("matrix", reg, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locklab matrix: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *budget < 0 {
		fmt.Fprintf(stderr, "locklab matrix: --budget %v: must not be negative\n", *budget)
		return exitUsage
	}
	if *parallel < 0 {
		fmt.Fprintf(stderr, "locklab matrix: --parallel %d: must not be negative\n", *parallel)
		return exitUsage
	}
	_, docker, code := where.resolve(ctx, stderr)
	if code >= 0 {
		return code
	}
	var src iofs.FS = matrix.Shipped
	if *dir != "" {
		src = os.DirFS(*dir)
	}
	m, err := matrix.Load(src, reg)
	if err != nil {
		fmt.Fprintf(stderr, "locklab matrix: %v\n", err)
		return exitUsage
	}
	opt := runner.MatrixOptions{Approaches: approaches, Faults: faults, Runs: *runs, Cells: *which, MinCatchRate: *minCatch,
		Seed: *seed, ResultsDir: *results, Docker: docker}
	plan, cells, err := runner.MatrixPlan(reg, m, opt)
	if err != nil {
		return exitCode(stderr, err)
	}
	if code := stalls.apply("matrix", &plan, stderr); code >= 0 {
		return code
	}
	spec, sharded, code := shards.spec("matrix", stderr)
	if code >= 0 {
		return code
	}
	estimate := func(p runner.Plan) time.Duration {
		est := runner.Estimate(p, !*sequential, *parallel, caseOverhead, clusterStart(docker != nil))
		if sharded {
			est /= time.Duration(spec.N) // about a shard's share
		}
		return est
	}
	est := estimate(plan)
	if *budget > 0 && est > *budget && opt.Runs > 1 {
		if plan, cells, est, code = fitBudget(reg, m, &opt, *budget, sharded, stalls, estimate, stderr); code >= 0 {
			return code
		}
	}
	rec, code := shardPlan(&plan, "matrix", shards, args, stderr)
	if code >= 0 {
		return code
	}
	if rec != nil {
		rec.Matrix = &matrixShard{Cells: cells, Runs: opt.Runs, MinCatchRate: opt.MinCatchRate}
	}
	fmt.Fprintf(stderr, "locklab matrix: %d cells, %d runs, about %v\n", countApplies(cells), len(plan.Cases), roughly(est))
	runCtx := ctx
	if *budget > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, *budget, fmt.Errorf("the --budget of %v ran out", *budget))
		defer cancel()
	}
	r := &runner.Runner{Log: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }, Parallel: !*sequential, MaxCases: *parallel}
	r.Progress = func(s runner.Status) {
		if s.Elapsed < 200*time.Millisecond {
			fmt.Fprintf(stderr, "[%d/%d] %s\n", s.Step, s.Steps, s.Case)
		}
	}
	began := time.Now()
	out, err := r.Run(runCtx, plan)
	if out == nil {
		return exitCode(stderr, err)
	}
	fmt.Fprintf(stderr, "locklab matrix: %d runs in %v (estimated %v)\n", len(out.Results.Runs), time.Since(began).Round(time.Second), roughly(est))
	mat := runner.MatrixResults(cells, out.Results.Runs, opt)
	mat.Generated = time.Now().UTC()
	mat.Command = "locklab matrix " + strings.Join(args, " ")
	warn := func(err error) { fmt.Fprintf(stderr, "locklab matrix: warning: %v\n", err) }
	if err := report.WriteMatrix(out.Dir, mat, *junit, warn); err != nil {
		fmt.Fprintf(stderr, "locklab matrix: %v\n", err)
		return exitInfra
	}
	fmt.Fprintf(stdout, "%s\nmatrix: %s\n", report.MatrixMarkdown(mat), filepath.Join(out.Dir, "matrix.html"))
	interrupted := err != nil && ctx.Err() == nil && runCtx.Err() != nil // the budget ran out
	if err != nil && !interrupted {
		return exitCode(stderr, err)
	}
	if rec != nil {
		return rec.finish(out.Dir, out.Results, stderr)
	}
	cut := ""
	if interrupted {
		cut = "the budget ran out"
	}
	return matrixVerdict("matrix", mat, cut, stderr)
}

// matrixVerdict prints the matrix's verdict and returns its exit code:
// contradicted cells outrank undecided ones. cut says why runs are
// missing ("": none is).
func matrixVerdict(cmd string, mat *report.Matrix, cut string, stderr io.Writer) int {
	bad, undecided := runner.MatrixExit(mat)
	switch {
	case len(bad) > 0:
		fmt.Fprintf(stderr, "locklab %s: %d cell(s) contradict their expectation: %s\n", cmd, len(bad), strings.Join(bad, "; "))
		return exitUnsafe
	case len(undecided) > 0:
		fmt.Fprintf(stderr, "locklab %s: %d cell(s) undecided: %s\n", cmd, len(undecided), strings.Join(undecided, "; "))
		return exitUndecided
	case cut != "":
		fmt.Fprintf(stderr, "locklab %s: %s; the cells that ran are reported\n", cmd, cut)
	}
	return exitOK
}

// fitBudget plans the runs to fit the budget: fewer per cell, each cell's
// first runs first (a budget that still runs out leaves every cell its
// first runs). A shard plans every run: fewer would make another plan on a
// runner of another speed, and the budget stops it. It returns the plan,
// its cells and its estimate, or an exit code >= 0.
func fitBudget(reg *impls.Registry, m *matrix.Matrix, opt *runner.MatrixOptions, budget time.Duration, sharded bool, stalls stallFlag,
	estimate func(runner.Plan) time.Duration, stderr io.Writer) (runner.Plan, []matrix.Cell, time.Duration, int) {
	asked := opt.Runs
	var askedEst, est time.Duration
	var plan runner.Plan
	var cells []matrix.Cell
	for {
		var err error
		if plan, cells, err = runner.MatrixPlan(reg, m, *opt); err != nil {
			return plan, nil, 0, exitCode(stderr, err)
		}
		if code := stalls.apply("matrix", &plan, stderr); code >= 0 {
			return plan, nil, 0, code
		}
		est = estimate(plan)
		if askedEst == 0 {
			askedEst = est
		}
		if sharded {
			fmt.Fprintf(stderr, "locklab matrix: this shard would take about %v, past the --budget of %v: it stops there (shards plan every run alike)\n",
				roughly(est), budget)
			return plan, cells, est, -1
		}
		if opt.Runs == 1 || est <= budget {
			break
		}
		opt.Runs--
	}
	fmt.Fprintf(stderr, "locklab matrix: --runs %d would take about %v, past the --budget of %v: %d run(s) per cell\n",
		asked, roughly(askedEst), budget, opt.Runs)
	return plan, cells, est, -1
}

func countApplies(cells []matrix.Cell) int {
	n := 0
	for _, c := range cells {
		if c.Applies {
			n++
		}
	}
	return n
}

// What a case costs beyond the time it runs (its clients start and stop,
// the servers' health is checked, the history is judged, plots drawn), as
// measured on a 2-core machine: the estimate printed at the start of a
// matrix adds it to every case, and clusterStart to every start of the
// servers.
const caseOverhead = 1500 * time.Millisecond

// clusterStart is what a start of the servers a group of cases asks for
// costs, as measured on a 2-core machine: embedded Redis nodes are up in
// about 0.1 s and stopped as fast (a row of redis-setnx-px-lua starts them
// three times: 3 s a start made its estimate 45 s against 35-36 s), while
// MariaDB, ZooKeeper, etcd, PostgreSQL and any container take seconds.
func clusterStart(docker bool) func([]runner.Case) time.Duration {
	return func(group []runner.Case) time.Duration {
		if docker {
			return 3 * time.Second
		}
		for _, c := range group {
			if c.Approach.Server != impls.Redis {
				return 3 * time.Second
			}
		}
		return 500 * time.Millisecond
	}
}

// roughly rounds an estimate to what it can promise: minutes past ten
// minutes, ten seconds past a minute, seconds below (a small matrix is not
// "about 0s").
func roughly(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Minute:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(10 * time.Second)
	}
	return d.Round(time.Second)
}

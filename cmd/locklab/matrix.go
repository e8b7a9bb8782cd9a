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

	"github.com/locklab/locklab/cluster"
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
	m, err := loadMatrix(*dir, reg)
	if err != nil {
		fmt.Fprintf(stderr, "locklab matrix: %v\n", err)
		return exitUsage
	}
	opt := runner.MatrixOptions{Approaches: approaches, Faults: faults, Runs: *runs, Cells: *which, MinCatchRate: *minCatch,
		Seed: *seed, ResultsDir: *results, Docker: docker}
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
	// A shard plans every run: fewer would make another plan on a runner
	// of another speed, and the budget stops it.
	fitTo := *budget
	if sharded {
		fitTo = 0
	}
	fit, err := runner.FitMatrix(reg, m, opt, fitTo, estimate)
	if err != nil {
		return exitCode(stderr, err)
	}
	plan, cells, est := fit.Plan, fit.Cells, fit.Estimate
	if code := stalls.apply("matrix", &plan, stderr); code >= 0 {
		return code
	}
	if sharded && *budget > 0 && est > *budget {
		fmt.Fprintf(stderr, "locklab matrix: this shard would take about %v, past the --budget of %v: it stops there (shards plan every run alike)\n",
			roughly(est), *budget)
	}
	if fit.Runs < opt.Runs {
		fmt.Fprintf(stderr, "locklab matrix: --runs %d would take about %v, past the --budget of %v: %d run(s) per cell\n",
			opt.Runs, roughly(fit.AskedEstimate), *budget, fit.Runs)
		opt.Runs = fit.Runs
	}
	rec, code := shardPlan(&plan, "matrix", shards, args, stderr)
	if code >= 0 {
		return code
	}
	if rec != nil {
		rec.Matrix = &matrixShard{Cells: cells, Runs: opt.Runs, MinCatchRate: opt.MinCatchRate}
	}
	fmt.Fprintf(stderr, "locklab matrix: %d cells, %d runs, about %v\n", countApplies(cells), len(plan.Cases), roughly(est))
	began := time.Now()
	out, interrupted, err := runMatrix(ctx, plan, *budget, !*sequential, *parallel, stderr)
	if out == nil {
		return exitCode(stderr, err)
	}
	fmt.Fprintf(stderr, "locklab matrix: %d runs in %v (estimated %v)\n", len(out.Results.Runs), time.Since(began).Round(time.Second), roughly(est))
	mat, werr := writeMatrix(out, cells, opt, args, *junit, stdout, stderr)
	if werr != nil {
		fmt.Fprintf(stderr, "locklab matrix: %v\n", werr)
		return exitInfra
	}
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

// writeMatrix folds the runs of out into the cells, writes the matrix's
// files beside the results and prints its table.
func writeMatrix(out *runner.Outcome, cells []matrix.Cell, opt runner.MatrixOptions, args []string, junit string, stdout, stderr io.Writer) (*report.Matrix, error) {
	mat := runner.MatrixResults(cells, out.Results.Runs, opt)
	mat.Generated = time.Now().UTC()
	mat.Command = "locklab matrix " + strings.Join(args, " ")
	warn := func(err error) { fmt.Fprintf(stderr, "locklab matrix: warning: %v\n", err) }
	if err := report.WriteMatrix(out.Dir, mat, junit, warn); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "%s\nmatrix: %s\n", report.MatrixMarkdown(mat), filepath.Join(out.Dir, "matrix.html"))
	return mat, nil
}

// loadMatrix is the built-in matrix, or the one in dir.
func loadMatrix(dir string, reg *impls.Registry) (*matrix.Matrix, error) {
	var src iofs.FS = matrix.Shipped
	if dir != "" {
		src = os.DirFS(dir)
	}
	return matrix.Load(src, reg)
}

// runMatrix runs plan within budget (0: no limit), saying on stderr what
// it starts; interrupted: the budget ran out (what ran is in the outcome).
func runMatrix(ctx context.Context, plan runner.Plan, budget time.Duration, parallel bool, maxCases int, stderr io.Writer) (out *runner.Outcome, interrupted bool, err error) {
	runCtx := ctx
	if budget > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, budget, fmt.Errorf("the --budget of %v ran out", budget))
		defer cancel()
	}
	r := &runner.Runner{Log: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }, Parallel: parallel, MaxCases: maxCases}
	r.Progress = func(s runner.Status) {
		if s.Elapsed < 200*time.Millisecond {
			fmt.Fprintf(stderr, "[%d/%d] %s\n", s.Step, s.Steps, s.Case)
		}
	}
	out, err = r.Run(runCtx, plan)
	return out, err != nil && ctx.Err() == nil && runCtx.Err() != nil, err
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
// costs: its slowest kind's (cluster.StartCost).
func clusterStart(docker bool) func([]runner.Case) time.Duration {
	return func(group []runner.Case) time.Duration {
		ss := make([]impls.Server, len(group))
		for i, c := range group {
			ss[i] = c.Approach.Server
		}
		return cluster.StartCost(docker, ss...)
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

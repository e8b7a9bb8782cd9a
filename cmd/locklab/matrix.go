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
	how := runner.MatrixRunOptions{Budget: *budget, Sequential: *sequential, MaxCases: *parallel}
	if err := how.Validate(); err != nil {
		fmt.Fprintf(stderr, "locklab matrix: %v\n", err)
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
	spec, _, code := shards.spec("matrix", stderr) // N 0: not sharded
	if code >= 0 {
		return code
	}
	fit, err := how.Fit(reg, m, opt, spec.N)
	if err != nil {
		return exitCode(stderr, err)
	}
	plan, cells, est := fit.Plan, fit.Cells, fit.Estimate
	if code := stalls.apply("matrix", &plan, stderr); code >= 0 {
		return code
	}
	opt.Runs = tellFit(fit, opt.Runs, how.Budget, stderr)
	rec, code := shardPlan(&plan, "matrix", shards, args, stderr)
	if code >= 0 {
		return code
	}
	if rec != nil {
		rec.Matrix = &matrixShard{Cells: cells, Runs: opt.Runs, MinCatchRate: opt.MinCatchRate}
	}
	r := matrixRun{how: how, opt: opt, plan: plan, cells: cells, est: est, rec: rec,
		command: "locklab matrix " + strings.Join(args, " "), junit: *junit}
	return r.run(ctx, stdout, stderr)
}

// matrixRun is a matrix planned, to run and report.
type matrixRun struct {
	how     runner.MatrixRunOptions
	opt     runner.MatrixOptions
	plan    runner.Plan
	cells   []matrix.Cell
	est     time.Duration
	rec     *shardRecord // nil: not a shard
	command string       // the command line, for the matrix's files
	junit   string
}

// run runs the plan, writes the matrix's files beside the results, prints
// its table and returns the exit code its verdict calls for (a shard's:
// the merge gives the verdict).
func (r matrixRun) run(ctx context.Context, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "locklab matrix: %d cells, %d runs, about %v\n", countApplies(r.cells), len(r.plan.Cases), roughly(r.est))
	began := time.Now()
	out, interrupted, err := r.how.Run(ctx, matrixRunner(stderr), r.plan)
	if out == nil {
		return exitCode(stderr, err)
	}
	fmt.Fprintf(stderr, "locklab matrix: %d runs in %v (estimated %v)\n", len(out.Results.Runs), time.Since(began).Round(time.Second), roughly(r.est))
	mat, werr := runner.WriteMatrix(out, r.cells, r.opt, r.command, r.junit, func(err error) {
		fmt.Fprintf(stderr, "locklab matrix: warning: %v\n", err)
	})
	if werr != nil {
		fmt.Fprintf(stderr, "locklab matrix: %v\n", werr)
		return exitInfra
	}
	fmt.Fprintf(stdout, "%s\nmatrix: %s\n", report.MatrixMarkdown(mat), filepath.Join(out.Dir, "matrix.html"))
	if err != nil && !interrupted {
		return exitCode(stderr, err)
	}
	if r.rec != nil {
		return r.rec.finish(out.Dir, out.Results, stderr)
	}
	cut := ""
	if interrupted {
		cut = "the budget ran out"
	}
	return matrixVerdict("matrix", mat, cut, stderr)
}

// tellFit says on stderr where the plan and the budget part: a shard past
// it (the budget stops it), or fewer runs per cell than asked, which it
// returns.
func tellFit(fit runner.MatrixFit, asked int, budget time.Duration, stderr io.Writer) int {
	if fit.PastBudget {
		fmt.Fprintf(stderr, "locklab matrix: this shard would take about %v, past the --budget of %v: it stops there (shards plan every run alike)\n",
			roughly(fit.Estimate), budget)
	}
	if fit.Runs < asked {
		fmt.Fprintf(stderr, "locklab matrix: --runs %d would take about %v, past the --budget of %v: %d run(s) per cell\n",
			asked, roughly(fit.AskedEstimate), budget, fit.Runs)
	}
	return fit.Runs
}

// matrixRunner says on stderr what the runner logs, and each case as it
// starts.
func matrixRunner(stderr io.Writer) *runner.Runner {
	r := &runner.Runner{Log: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }}
	r.Progress = func(s runner.Status) {
		if s.Elapsed < 200*time.Millisecond {
			fmt.Fprintf(stderr, "[%d/%d] %s\n", s.Step, s.Steps, s.Case)
		}
	}
	return r
}

// loadMatrix is the built-in matrix, or the one in dir.
func loadMatrix(dir string, reg *impls.Registry) (*matrix.Matrix, error) {
	var src iofs.FS = matrix.Shipped
	if dir != "" {
		src = os.DirFS(dir)
	}
	return matrix.Load(src, reg)
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

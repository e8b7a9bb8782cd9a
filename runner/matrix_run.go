package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
)

// MatrixRunOptions say how a matrix plan runs (MatrixOptions say which
// part of the matrix it is).
type MatrixRunOptions struct {
	// Budget stops the runs after this long (what ran is kept and
	// reported); 0: no limit. An unsharded plan is fitted to it (Fit).
	Budget time.Duration
	// Sequential runs one case at a time; otherwise cells of different
	// server kinds run side by side, at most MaxCases cases at once (0:
	// DefaultMaxCases).
	Sequential bool
	MaxCases   int
}

// Validate says whether the budget and the cases at once are not
// negative.
func (h MatrixRunOptions) Validate() error {
	switch {
	case h.Budget < 0:
		return fmt.Errorf("--budget %v: must not be negative", h.Budget)
	case h.MaxCases < 0:
		return fmt.Errorf("--parallel %d: must not be negative", h.MaxCases)
	}
	return nil
}

// Estimate is about how long p takes run as h says, its servers started
// as containers when docker (Estimate, with CaseOverhead and
// ClusterStart).
func (h MatrixRunOptions) Estimate(p Plan, docker bool) time.Duration {
	return Estimate(p, !h.Sequential, h.MaxCases, CaseOverhead, ClusterStart(docker))
}

// Fit plans the part of the matrix opt chooses, fitted to the budget
// (FitMatrix), unless the plan is split into shards (0: it is not): a
// shard plans every run, since fewer would make another plan on a runner
// of another speed, and the budget stops it. A shard's estimate is about
// its share; PastBudget says that share would run past the budget.
func (h MatrixRunOptions) Fit(reg *impls.Registry, m *matrix.Matrix, opt MatrixOptions, shards int) (MatrixFit, error) {
	return h.fit(reg, m, opt, shards, func(p Plan) time.Duration { return h.Estimate(p, opt.Docker != nil) })
}

func (h MatrixRunOptions) fit(reg *impls.Registry, m *matrix.Matrix, opt MatrixOptions, shards int, estimate func(Plan) time.Duration) (MatrixFit, error) {
	budget := h.Budget
	if shards > 0 {
		budget = 0
		whole := estimate
		estimate = func(p Plan) time.Duration { return whole(p) / time.Duration(shards) }
	}
	fit, err := FitMatrix(reg, m, opt, budget, estimate)
	if err != nil {
		return MatrixFit{}, err
	}
	fit.PastBudget = shards > 0 && h.Budget > 0 && fit.Estimate > h.Budget
	return fit, nil
}

// Run runs plan with r (its Log and Progress the caller's) as h says,
// within the budget; interrupted: the budget ran out (what ran is in the
// outcome).
func (h MatrixRunOptions) Run(ctx context.Context, r *Runner, plan Plan) (out *Outcome, interrupted bool, err error) {
	runCtx := ctx
	if h.Budget > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, h.Budget, fmt.Errorf("the --budget of %v ran out", h.Budget))
		defer cancel()
	}
	r.Parallel, r.MaxCases = !h.Sequential, h.MaxCases
	out, err = r.Run(runCtx, plan)
	return out, err != nil && ctx.Err() == nil && runCtx.Err() != nil, err
}

// WriteMatrix folds the runs of out into the cells (MatrixResults), dates
// the matrix and gives it the command line, and writes its files beside
// the results (report.WriteMatrix: JUnit XML to junit too, unless "").
func WriteMatrix(out *Outcome, cells []matrix.Cell, opt MatrixOptions, command, junit string, warn func(error)) (*report.Matrix, error) {
	mat := MatrixResults(cells, out.Results.Runs, opt)
	mat.Generated = time.Now().UTC()
	mat.Command = command
	if err := report.WriteMatrix(out.Dir, mat, junit, warn); err != nil {
		return nil, err
	}
	return mat, nil
}

package runner

import (
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
)

// FitRuns keeps the runs asked for when they fit or there is no budget,
// otherwise the most that fit, and one when none does.
func TestFitRuns(t *testing.T) {
	perRun := func(runs int) time.Duration { return time.Duration(runs)*10*time.Second + 5*time.Second }
	for _, tc := range []struct {
		name   string
		asked  int
		budget time.Duration
		want   int
	}{
		{"no budget", 5, 0, 5},
		{"fits", 3, time.Minute, 3},
		{"fits exactly", 3, 35 * time.Second, 3},
		{"one less", 3, 34 * time.Second, 2},
		{"several less", 10, 31 * time.Second, 2},
		{"none fits: one", 4, time.Second, 1},
		{"one asked", 1, time.Second, 1},
	} {
		if got := FitRuns(tc.asked, tc.budget, perRun); got != tc.want {
			t.Errorf("%s: FitRuns(%d, %v) = %d, want %d", tc.name, tc.asked, tc.budget, got, tc.want)
		}
	}
}

// FitMatrix plans the runs that fit the budget, with their estimate and
// that of the runs asked for; without a budget, those asked for.
func TestFitMatrix(t *testing.T) {
	reg, m, opt, perCase := fitFixture(t)
	for _, tc := range []struct {
		budget              time.Duration
		runs                int
		estimate, askedEsts time.Duration
	}{
		{0, 4, 16 * time.Second, 16 * time.Second},
		{16 * time.Second, 4, 16 * time.Second, 16 * time.Second},
		{9 * time.Second, 2, 8 * time.Second, 16 * time.Second},
		{time.Second, 1, 4 * time.Second, 16 * time.Second},
	} {
		fit, err := FitMatrix(reg, m, opt, tc.budget, perCase)
		if err != nil {
			t.Fatal(err)
		}
		if fit.Runs != tc.runs || len(fit.Plan.Cases) != 4*tc.runs || fit.Estimate != tc.estimate || fit.AskedEstimate != tc.askedEsts {
			t.Errorf("budget %v: %d runs, %d cases, about %v of %v; want %d runs, %d cases, about %v of %v", tc.budget,
				fit.Runs, len(fit.Plan.Cases), fit.Estimate, fit.AskedEstimate, tc.runs, 4*tc.runs, tc.estimate, tc.askedEsts)
		}
		for _, c := range fit.Plan.Cases {
			if c.Round > tc.runs {
				t.Errorf("budget %v: case %s of round %d planned", tc.budget, c.Name, c.Round)
			}
		}
	}
	if _, err := FitMatrix(reg, m, MatrixOptions{Runs: 0}, time.Minute, perCase); err == nil {
		t.Error("no error for --runs 0")
	}
}

// fitFixture is the shipped matrix, two approaches by two faults at 4 runs,
// and an estimate of a second a case: what the fit tests plan.
func fitFixture(t *testing.T) (*impls.Registry, *matrix.Matrix, MatrixOptions, func(Plan) time.Duration) {
	t.Helper()
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	opt := MatrixOptions{Approaches: []string{"redis-setnx-px-lua", "zk-sequential"}, Faults: []string{"none", "client-pause"}, Runs: 4}
	return reg, m, opt, func(p Plan) time.Duration { return time.Duration(len(p.Cases)) * time.Second }
}

package runner

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/internal/errtest"
	"github.com/locklab/locklab/stall"
)

func TestMatrixOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       MatrixOptions
		wantErr string
	}{
		{"one run of every cell", MatrixOptions{Runs: 1}, ""},
		{"a catch-rate pass", MatrixOptions{Runs: 20, Cells: "unsafe", MinCatchRate: 0.95}, ""},
		{"the safe cells, every run must catch", MatrixOptions{Runs: 3, Cells: "safe", MinCatchRate: 1}, ""},
		{"no run", MatrixOptions{Cells: "all"}, "--runs 0: want at least 1"},
		{"runs first", MatrixOptions{Runs: -1, Cells: "risky"}, "--runs -1"},
		{"unknown cells", MatrixOptions{Runs: 1, Cells: "risky"}, `--cells "risky": want all, unsafe (the cells that expect a violation) or safe`},
		{"a catch rate past one", MatrixOptions{Runs: 1, MinCatchRate: 1.5}, "--min-catch-rate 1.5: want a share between 0 and 1"},
		{"a negative catch rate", MatrixOptions{Runs: 1, MinCatchRate: -0.1}, "--min-catch-rate -0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errtest.Want(t, tc.o.Validate(), tc.wantErr)
		})
	}
}

func TestMatrixRunOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       MatrixRunOptions
		wantErr string
	}{
		{"the defaults", MatrixRunOptions{}, ""},
		{"a budget, cases at once", MatrixRunOptions{Budget: time.Hour, MaxCases: 4}, ""},
		{"one at a time", MatrixRunOptions{Sequential: true}, ""},
		{"a negative budget", MatrixRunOptions{Budget: -time.Second}, "--budget -1s: must not be negative"},
		{"negative cases at once", MatrixRunOptions{MaxCases: -2}, "--parallel -2: must not be negative"},
		{"the budget first", MatrixRunOptions{Budget: -time.Minute, MaxCases: -1}, "--budget -1m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errtest.Want(t, tc.h.Validate(), tc.wantErr)
		})
	}
}

// Fit fits an unsharded plan to the budget; a shard plans every run, its
// estimate its share, and says when that share runs past the budget.
func TestMatrixRunOptionsFit(t *testing.T) {
	reg, m, opt, perCase := fitFixture(t)
	for _, tc := range []struct {
		name       string
		budget     time.Duration
		shards     int
		runs       int
		estimate   time.Duration
		pastBudget bool
	}{
		{"unsharded, no budget", 0, 0, 4, 16 * time.Second, false},
		{"unsharded, fitted", 9 * time.Second, 0, 2, 8 * time.Second, false},
		{"a shard within the budget", 9 * time.Second, 2, 4, 8 * time.Second, false},
		{"a shard past the budget", 5 * time.Second, 2, 4, 8 * time.Second, true},
		{"a shard without a budget", 0, 4, 4, 4 * time.Second, false},
		{"the one shard of one", 9 * time.Second, 1, 4, 16 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fit, err := MatrixRunOptions{Budget: tc.budget}.fit(reg, m, opt, tc.shards, perCase)
			if err != nil {
				t.Fatal(err)
			}
			if fit.Runs != tc.runs || fit.Estimate != tc.estimate || fit.PastBudget != tc.pastBudget {
				t.Errorf("%d runs, about %v, past the budget %v; want %d, %v, %v", fit.Runs, fit.Estimate, fit.PastBudget,
					tc.runs, tc.estimate, tc.pastBudget)
			}
		})
	}
	if _, err := (MatrixRunOptions{}).Fit(reg, m, MatrixOptions{Runs: 0}, 0); err == nil {
		t.Error("no error for --runs 0")
	}
}

// Run stops at the budget, keeps what ran and says the budget ran out.
func TestMatrixRunOptionsRunStopsAtTheBudget(t *testing.T) {
	p := memoryPlan(t, memlock.NewService(1), 2, 30*time.Second)
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	out, interrupted, err := MatrixRunOptions{Budget: 500 * time.Millisecond}.Run(context.Background(), &Runner{Log: t.Logf}, p)
	if took := time.Since(start); took > 20*time.Second+stalls.Within(start, start.Add(took)) {
		t.Errorf("took %v past a budget of 500ms", took)
	}
	if err == nil || !interrupted || out == nil {
		t.Fatalf("err %v, interrupted %v, outcome %v; want the budget's error, interrupted, an outcome", err, interrupted, out)
	}
}

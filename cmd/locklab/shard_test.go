package main

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/shard"
)

// realPlan is the shipped matrix's plan as `locklab matrix --cells which
// --runs runs` makes it.
func realPlan(t *testing.T, which string, runs int) runner.Plan {
	t.Helper()
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := runner.MatrixPlan(reg, m, runner.MatrixOptions{Runs: runs, Cells: which, Seed: 1, ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The real matrix's plans, split by their own estimates: the shards' loads
// within 20% of each other, each case in one shard, the plan's identity
// the same when the plan is made again.
func TestShardRealMatrixPlan(t *testing.T) {
	for _, c := range []struct {
		which string
		runs  int
		n     []int
		// sideBySide: hold the shards' estimates run side by side to 20%
		// too (a plan of a run per cell has too few cases of each kind
		// of server for the lanes to even out: logged only).
		sideBySide bool
	}{{"all", 3, []int{2, 4, 8}, true}, {"unsafe", 20, []int{2, 4, 8}, true}, {"safe", 1, []int{2, 4}, false}} {
		p := realPlan(t, c.which, c.runs)
		items := shardItems(p)
		for _, n := range c.n {
			split, err := shard.Split(items, n)
			if err != nil {
				t.Fatal(err)
			}
			loads := shard.Loads(items, split, n)
			lo, hi := slices.Min(loads), slices.Max(loads)
			t.Logf("--cells %s --runs %d, %d cases in %d shards: loads %v", c.which, c.runs, len(items), n, loads)
			if float64(hi) > 1.2*float64(lo) {
				t.Errorf("--cells %s --runs %d in %d shards: loads %v, the longest more than 20%% past the shortest", c.which, c.runs, n, loads)
			}
		}
		// What a shard takes is its plan's estimate run side by side,
		// not its cases' sum: the servers' lanes decide it.
		est := func(p runner.Plan) time.Duration {
			return runner.Estimate(p, true, 0, runner.CaseOverhead, runner.ClusterStart(false))
		}
		var ests []time.Duration
		for k := 1; k <= 4; k++ {
			q := p
			q.Config = map[string]any{}
			if _, err := takeShard(&q, "matrix", shard.Spec{K: k, N: 4}); err != nil {
				t.Fatal(err)
			}
			ests = append(ests, est(q))
		}
		t.Logf("--cells %s --runs %d side by side: %v whole, %v in 4 shards", c.which, c.runs, est(p), ests)
		if lo, hi := slices.Min(ests), slices.Max(ests); c.sideBySide && float64(hi) > 1.2*float64(lo) {
			t.Errorf("--cells %s --runs %d in 4 shards side by side: %v, the longest more than 20%% past the shortest", c.which, c.runs, ests)
		}
		h1, err := planHash(p)
		if err != nil {
			t.Fatal(err)
		}
		h2, _ := planHash(realPlan(t, c.which, c.runs))
		if h1 != h2 {
			t.Errorf("--cells %s: the plan made twice has two identities: %s, %s", c.which, h1, h2)
		}
	}
	all3, unsafe20 := realPlan(t, "all", 3), realPlan(t, "unsafe", 20)
	ha, _ := planHash(all3)
	hu, _ := planHash(unsafe20)
	other := realPlan(t, "all", 3)
	other.Cases[0].Workload.Seed++
	ho, _ := planHash(other)
	if ha == hu || ha == ho {
		t.Errorf("different plans share an identity: %s %s %s", ha, hu, ho)
	}
}

// takeShard keeps its cases in plan order and says where each stood.
func TestTakeShard(t *testing.T) {
	full := realPlan(t, "all", 1)
	seen := map[string]int{}
	for k := 1; k <= 3; k++ {
		p := full
		p.Config = map[string]any{}
		rec, err := takeShard(&p, "matrix", shard.Spec{K: k, N: 3})
		if err != nil {
			t.Fatal(err)
		}
		if rec.PlanCases != len(full.Cases) || len(rec.Cases) != len(p.Cases) || !slices.IsSorted(rec.At) {
			t.Fatalf("shard %d: %+v", k, rec)
		}
		for j, c := range p.Cases {
			if full.Cases[rec.At[j]].Name != c.Name || rec.Cases[j] != c.Name {
				t.Fatalf("shard %d: case %s recorded at %d", k, c.Name, rec.At[j])
			}
			seen[c.Name]++
		}
	}
	if len(seen) != len(full.Cases) {
		t.Fatalf("%d of %d cases in some shard", len(seen), len(full.Cases))
	}
}

// explore --shard: at least N approaches, each shard its share under the
// seed; fewer, every approach under a seed of the shard's own.
func TestShardExplore(t *testing.T) {
	var stderr bytes.Buffer
	whole := func() explore.Config {
		return explore.Config{Approaches: []string{"a", "b", "c"}, Budget: time.Minute, Seed: 5}
	}
	flagOf := func(s string) shardFlag { return shardFlag{s: &s} }
	seen := map[string]int{}
	plans := map[string]bool{}
	for k := 1; k <= 2; k++ {
		cfg := whole()
		rec, code := shardExplore(&cfg, flagOf(fmt.Sprintf("%d/2", k)), &stderr)
		as, seed := cfg.Approaches, cfg.Seed
		if code >= 0 || rec == nil || seed != 5 || len(as) == 0 {
			t.Fatalf("shard %d/2 of 3 approaches: %v, seed %d, exit %d\n%s", k, as, seed, code, stderr.String())
		}
		for _, a := range as {
			seen[a]++
		}
		plans[rec.Plan] = true
		if !slices.Equal(rec.Explore.Approaches, as) || rec.Explore.Seed != seed {
			t.Errorf("shard %d/2 records %+v, explores %v under %d", k, rec.Explore, as, seed)
		}
	}
	if len(seen) != 3 || seen["a"] != 1 || seen["b"] != 1 || seen["c"] != 1 || len(plans) != 1 {
		t.Errorf("approaches over 2 shards: %v, plans %v", seen, plans)
	}
	seeds := map[uint64]bool{}
	for k := 1; k <= 4; k++ {
		cfg := whole()
		if _, code := shardExplore(&cfg, flagOf(fmt.Sprintf("%d/4", k)), &stderr); code >= 0 || len(cfg.Approaches) != 3 {
			t.Fatalf("shard %d/4 of 3 approaches: %v, exit %d", k, cfg.Approaches, code)
		}
		seeds[cfg.Seed] = true
	}
	if len(seeds) != 4 || !seeds[5] {
		t.Errorf("4 shards of 3 approaches explore under seeds %v: want 4, the first 5", seeds)
	}
}

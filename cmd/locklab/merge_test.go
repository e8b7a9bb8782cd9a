package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
)

// fakeShard is shard k of n of a plan of cases, holding runs of the named
// cases (each at its place in the plan), in a folder of its own.
func fakeShard(t *testing.T, k, n int, plan string, cases []string, at []int, runs ...report.Run) shardDir {
	t.Helper()
	return shardDir{Dir: filepath.Join(t.TempDir(), "shard"),
		Rec: shardRecord{Kind: "matrix", Title: "matrix", Plan: plan, K: k, N: n, Version: "v1", PlanCases: 4, Cases: cases, At: at},
		Res: &report.Results{Complete: true, Runs: runs, Versions: map[string]string{"locklab": "v1"}, Config: map[string]any{"runs": 4}}}
}

func TestCheckShardsRefuses(t *testing.T) {
	ok := func() []shardDir {
		a := fakeShard(t, 1, 2, "p1", []string{"c1", "c3"}, []int{0, 2})
		b := fakeShard(t, 2, 2, "p1", []string{"c2", "c4"}, []int{1, 3})
		a.Dir, b.Dir = "A", "B"
		return []shardDir{a, b}
	}
	if err := checkShards(ok()); err != nil {
		t.Fatalf("two shards of one plan refused: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(ds []shardDir) []shardDir
		want   []string // what the one line must name
	}{
		{"other plan", func(ds []shardDir) []shardDir { ds[1].Rec.Plan = "p2"; return ds }, []string{"B", "p2", "A", "p1"}},
		{"other N", func(ds []shardDir) []shardDir { ds[1].Rec.N = 3; return ds }, []string{"B", "shard 2 of 3", "A", "of 2"}},
		{"other locklab", func(ds []shardDir) []shardDir { ds[1].Rec.Version = "v2"; return ds }, []string{"B", `"v2"`, "A", `"v1"`}},
		{"other kind", func(ds []shardDir) []shardDir { ds[1].Rec.Kind = "bench"; return ds }, []string{"B", "bench", "A", "matrix"}},
		{"doubled", func(ds []shardDir) []shardDir { ds[1].Rec.K = 1; return ds }, []string{"shard 1/2 given twice", "A", "B"}},
		{"missing", func(ds []shardDir) []shardDir { return ds[:1] }, []string{"shard(s) 2 of 2 missing", "given: 1"}},
		{"none", func([]shardDir) []shardDir { return nil }, []string{"no shard folder"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkShards(c.change(ok()))
			if err == nil {
				t.Fatal("merged")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
		})
	}
}

func TestMergeRunsRefusesAnotherSplit(t *testing.T) {
	run := func(c string) report.Run { return report.Run{Case: c} }
	for _, c := range []struct {
		name string
		a, b shardDir
		want string
	}{
		{"a case in two shards", fakeShard(t, 1, 2, "p", []string{"c1", "c2"}, []int{0, 1}), fakeShard(t, 2, 2, "p", []string{"c2", "c3"}, []int{1, 2}), "case c2 falls to two shards"},
		{"a case in none", fakeShard(t, 1, 2, "p", []string{"c1"}, []int{0}), fakeShard(t, 2, 2, "p", []string{"c2", "c3"}, []int{1, 2}), "hold 3 of the plan's 4 cases"},
		{"a run of another shard's case", fakeShard(t, 1, 2, "p", []string{"c1", "c2"}, []int{0, 1}, run("c3")),
			fakeShard(t, 2, 2, "p", []string{"c3", "c4"}, []int{2, 3}), "run c3 is not one of this shard's cases"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := mergeRuns([]shardDir{c.a, c.b}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// A cell's runs in two shards: the catch rate is counted over all four,
// so the merged cell meets a minimum catch rate that neither shard's half
// does, and the exit code is the unsharded one's.
func TestMergeRecountsCatchRates(t *testing.T) {
	name := func(i int) string { return runner.CellCaseName("f", "a", i) }
	caught := func(i int) report.Run {
		return report.Run{Case: name(i), Approach: "a", Status: verdict.Agrees, Expected: []string{"double-grant"},
			Observed: []string{"double-grant:both-valid"}, DoubleGrants: 1, ViolationCount: 1, FirstViolationAt: 0.5}
	}
	missed := report.Run{Case: name(3), Approach: "a", Status: verdict.Contradicts, Missed: true, Expected: []string{"double-grant"}, FirstViolationAt: -1}
	cells := []matrix.Cell{{Approach: "a", Fault: "f", Applies: true, Expect: verdict.Expect("racy", verdict.DoubleGrant)}}
	for _, c := range []struct {
		minCatch float64
		code     int
	}{{0.75, exitOK}, {0.8, exitUnsafe}} {
		a := fakeShard(t, 1, 2, "p", []string{name(1), name(3)}, []int{0, 2}, caught(1), missed)
		b := fakeShard(t, 2, 2, "p", []string{name(2), name(4)}, []int{1, 3}, caught(4), caught(2))
		for _, d := range []*shardDir{&a, &b} {
			d.Rec.Matrix = &matrixShard{Cells: cells, Runs: 4, MinCatchRate: c.minCatch}
			if err := os.MkdirAll(d.Dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		ds := []shardDir{b, a} // in any order
		runs, err := mergeRuns(ds)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range runs {
			if r.Case != name(i+1) {
				t.Fatalf("run %d is %s: not in plan order", i, r.Case)
			}
		}
		res := mergeResults(ds, runs)
		if v := res.Verdict; v.AsExpected != 3 || v.Contradicted != 1 || v.DoubleGrants != 3 || v.Safe {
			t.Errorf("verdict %+v: want 3 as expected, 1 contradicted, 3 double grants", v)
		}
		out := filepath.Join(t.TempDir(), "merged")
		if err := newFolder(out); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code, err := writeMergedKind(out, ds, res, "", &stdout, &stderr)
		if err != nil || code != c.code {
			t.Fatalf("--min-catch-rate %v: exit %d (%v), want %d\n%s", c.minCatch, code, err, c.code, stderr.String())
		}
		var m report.Matrix
		b2, _ := os.ReadFile(filepath.Join(out, "matrix.json"))
		if err := json.Unmarshal(b2, &m); err != nil {
			t.Fatal(err)
		}
		if cell := m.Cells[0]; cell.Ran != 4 || cell.Caught != 3 || len(cell.TimesToViolation) != 3 {
			t.Errorf("merged cell %+v: want 3 of 4 runs caught", cell)
		}
		var rec shardRecord
		b3, _ := os.ReadFile(filepath.Join(out, shardFileName))
		if err := json.Unmarshal(b3, &rec); err != nil || len(rec.Merged) != 2 || len(rec.From) != 2 {
			t.Errorf("the merged folder does not say which shards it holds: %s", b3)
		}
	}
}

func TestUnsharded(t *testing.T) {
	for in, want := range map[string]string{
		"locklab matrix --runs 3 --shard 2/4 --results r": "locklab matrix --runs 3 --results r",
		"locklab matrix --shard=ci --runs 3":              "locklab matrix --runs 3",
		"locklab matrix --runs 3":                         "locklab matrix --runs 3",
	} {
		if got := unsharded(in); got != want {
			t.Errorf("unsharded(%q) = %q, want %q", in, got, want)
		}
	}
}

// matrixInto runs `locklab matrix` with args into its own results folder
// and returns the folder and the exit code.
func matrixInto(t *testing.T, tmp, name string, args ...string) (string, int) {
	t.Helper()
	results := filepath.Join(tmp, name)
	cmd := locklab(tmp, append([]string{"matrix", "--results", results}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s: %v\n%s", name, err, out.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(results, "*"))
	if len(dirs) != 1 {
		t.Fatalf("%s: exit %d, results %v\n%s", name, code, dirs, out.String())
	}
	return dirs[0], code
}

func readMatrix(t *testing.T, dir string) report.Matrix {
	t.Helper()
	var m report.Matrix
	b, err := os.ReadFile(filepath.Join(dir, "matrix.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A small matrix run whole, and as 2 shards (separate processes, one
// after the other) merged: the merged matrix has the whole run's cells and
// run counts, each cell's verdict is what the shards' runs of it add up to
// (not the whole run's: those are other runs on real servers, which a
// loaded machine may make undecided in one and not the other), and the
// exit code is the merged verdicts'.
func TestMatrixShardsMergedEqualUnsharded(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	tmp := t.TempDir()
	args := []string{"--approaches", "redis-setnx-px-lua,redis-get-set", "--faults", "none,client-pause", "--runs", "2",
		"--stall-threshold", catchStallThreshold}
	whole, _ := matrixInto(t, tmp, "whole", args...)
	var shards []string
	shardRuns := map[string]report.Run{} // by case, from the shards' results.json
	for _, k := range []string{"1/2", "2/2"} {
		dir, code := matrixInto(t, tmp, "shard"+k[:1], append(args, "--shard", k)...)
		if code != exitOK && code != exitUnsafe && code != exitUndecided {
			t.Fatalf("shard %s: exit %d", k, code)
		}
		shards = append(shards, dir)
		_, res := readResults(t, filepath.Dir(dir))
		for _, r := range res.Runs {
			if _, twice := shardRuns[r.Case]; twice {
				t.Fatalf("%s ran in both shards", r.Case)
			}
			shardRuns[r.Case] = r
		}
	}
	merged := filepath.Join(tmp, "merged")
	junit := filepath.Join(tmp, "merged.xml")
	cmd := locklab(tmp, append(append([]string{"merge"}, shards...), "--out", merged, "--junit", junit)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	for _, f := range []string{"matrix.md", "matrix-compact.md", "matrix.json", "matrix.png", "matrix.html", "results.json",
		"summary.md", "index.html", shardFileName, "shard-1/results.json", "shard-2/results.json"} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Error(err)
		}
	}
	want, got := readMatrix(t, whole), readMatrix(t, merged)
	if len(got.Cells) != len(want.Cells) {
		t.Fatalf("%d cells merged, %d run whole", len(got.Cells), len(want.Cells))
	}
	wantCode := exitOK
	for _, w := range want.Cells {
		g, ok := got.Cell(w.Approach, w.Fault)
		if !ok {
			t.Errorf("%s under %s: not merged", w.Approach, w.Fault)
			continue
		}
		tally := verdict.Tally{ExpectsViolation: g.ExpectsViolation}
		for _, c := range g.RunCases {
			r, ok := shardRuns[c]
			if !ok {
				t.Errorf("%s under %s: merged run %s is no shard's", w.Approach, w.Fault, c)
			}
			tally.AddStatus(r.Status, r.Missed)
		}
		st := tally.Status(verdict.Policy{Need: 1, MinCatchRate: got.MinCatchRate})
		if g.Ran != w.Ran || tally.Runs != w.Ran || g.Status != st {
			t.Errorf("%s under %s: merged %d runs, %s; whole %d runs; the shards' %d runs add up to %s",
				w.Approach, w.Fault, g.Ran, g.Status, w.Ran, tally.Runs, st)
		}
		switch {
		case g.Status == verdict.Contradicts:
			wantCode = exitUnsafe
		case g.Status == verdict.Undecided && wantCode == exitOK:
			wantCode = exitUndecided
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != wantCode {
		t.Fatalf("merge: exit %d, its verdicts' %d\n%s", code, wantCode, out.String())
	}
	if suite, _ := readJUnit(t, junit); suite.Tests != len(want.Cells) {
		t.Errorf("junit: %+v", suite)
	}
	// A shard given twice is refused, naming it.
	cmd = locklab(tmp, "merge", shards[0], shards[0], "--out", filepath.Join(tmp, "again"))
	b, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(b), "shard 1/2 given twice") {
		t.Errorf("a doubled shard: exit %d: %s", cmd.ProcessState.ExitCode(), b)
	}
}

// run --runs and bench as 2 shards each, merged: every run in the merged
// results.json, the repeated runs counted together, one exit code.
func TestRunAndBenchShardsMerged(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	tmp := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string // in the merge's output
	}{
		{"run", []string{"run", "../../scenarios/gc-pause-past-ttl.yaml", "--approach", "redis-setnx-px-lua", "--runs", "4", "--need", "3",
			"--stall-threshold", catchStallThreshold}, "redis-setnx-px-lua: as expected in"},
		{"bench", []string{"bench", "--approaches", "redis-setnx-px-lua,redis-get-set", "--clients", "1,2", "--duration", "1s"}, "redis-get-set-c2"},
	} {
		var shards []string
		for _, k := range []string{"1", "2"} {
			results := filepath.Join(tmp, c.name+k)
			out, err := locklab(tmp, append(c.args, "--results", results, "--shard", k+"/2")...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s shard %s/2: %v\n%s", c.name, k, err, out)
			}
			dirs, _ := filepath.Glob(filepath.Join(results, "*"))
			if len(dirs) != 1 {
				t.Fatalf("%s shard %s/2: %v", c.name, k, dirs)
			}
			shards = append(shards, dirs[0])
		}
		merged := filepath.Join(tmp, c.name+"-merged")
		out, err := locklab(tmp, append(append([]string{"merge"}, shards...), "--out", merged)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Fatalf("%s merge: %v, output lacks %q:\n%s", c.name, err, c.want, out)
		}
		res, err := report.ReadResults(merged)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Runs) != 4 || res.Verdict.AsExpected != 4 {
			t.Errorf("%s merged: %d runs, %d as expected; want 4 and 4", c.name, len(res.Runs), res.Verdict.AsExpected)
		}
	}
}

// Two shards' explorations found one class each way: the merge keeps one
// finding per approach and class, the better shrunk one with its file,
// counts its runs over both, and exits 1 for a new class.
func TestMergeExploreDeduplicatesByClass(t *testing.T) {
	finding := func(class string, known bool, faults int, confirmed bool, file string) explore.FindingSummary {
		return explore.FindingSummary{Approach: "a", Class: verdict.Outcome(class), Known: known, Seen: 2, File: file,
			Final: explore.ScheduleSummary{Faults: faults}, Shrink: &explore.ShrinkSummary{Confirmed: confirmed}}
	}
	var ds []shardDir
	for k, fs := range [][]explore.FindingSummary{
		{finding("double-grant", true, 3, true, "found/a--double-grant--known.yaml"), finding("lost-update", false, 2, false, "found/a--lost-update.yaml")},
		{finding("double-grant", true, 1, true, "found/a--double-grant--known.yaml")},
	} {
		d := fakeShard(t, k+1, 2, "p", nil, nil)
		d.Rec.Kind = "explore"
		d.Res.Explore = explore.Summary{Runs: 10, Findings: fs}
		for _, f := range fs {
			path := filepath.Join(d.Dir, f.File)
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(fmt.Sprintf("# shard %d, %d faults\n", k+1, f.Final.Faults)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ds = append(ds, d)
	}
	out := t.TempDir()
	sum, files, err := mergeExplore(out, ds)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Runs != 20 || sum.Classes != 2 || sum.Known != 1 || sum.New != 1 || len(sum.Findings) != 2 || len(files) != 2 {
		t.Fatalf("merged %+v, files %v", sum, files)
	}
	dg := sum.Findings[0]
	if dg.Class != "double-grant" || dg.Final.Faults != 1 || dg.Seen != 4 {
		t.Errorf("the double grant kept: %+v, want shard 2's (1 fault), seen in 4 runs", dg)
	}
	if b, _ := os.ReadFile(filepath.Join(out, dg.File)); string(b) != "# shard 2, 1 faults\n" {
		t.Errorf("%s holds %q, want shard 2's file", dg.File, b)
	}
	var stdout, stderr bytes.Buffer
	junit := filepath.Join(out, "explore.xml")
	if code, err := exploreVerdict(out, sum, junit, &stdout, &stderr); err != nil || code != exitUnsafe {
		t.Errorf("exit %d (%v), want %d for a new class", code, err, exitUnsafe)
	}
	if suite, _ := readJUnit(t, junit); suite.Tests != 2 || suite.Failures != 1 {
		t.Errorf("junit: %+v", suite)
	}
}

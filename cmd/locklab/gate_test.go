package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// The CI gate on a real bench: compared with itself it passes; compared
// with a baseline ten times as fast it fails naming the regression, in the
// table and in the JUnit file; a bad baseline is refused before anything
// runs.
func TestBenchBaselineGate(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "results")
	bench := func(extra ...string) (int, string) {
		cmd := locklab(tmp, append([]string{"bench", "--approaches", "redis-setnx-px-lua", "--clients", "1,2",
			"--duration", "1s", "--results", results}, extra...)...)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := bench(); code != exitOK {
		t.Fatalf("first bench: exit %d\n%s", code, out)
	}
	dir, res := readResults(t, results)
	base := filepath.Join(tmp, "baseline.json")
	if err := os.Rename(filepath.Join(dir, "results.json"), base); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir)

	// Itself as baseline: compare exits 0.
	if out, err := locklab(tmp, "compare", base, base).CombinedOutput(); err != nil || !strings.Contains(string(out), "no regression beyond 15% in 2 case(s)") {
		t.Fatalf("compare with itself: %v\n%s", err, out)
	}

	// A baseline a thousand times as fast as this machine: every case
	// regressed, however noisy the machine (ten times was not enough: two
	// 1 s runs of 2 clients differed by more than that under load).
	fast := res
	for i := range fast.Runs {
		fast.Runs[i].AcquiresPerSec *= 1000
	}
	fastPath := filepath.Join(tmp, "fast.json")
	if err := report.WriteJSON(fastPath, fast); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(tmp, "bench.xml")
	code, out := bench("--baseline", fastPath, "--junit", junit)
	if code != exitUnsafe || !strings.Contains(out, "REGRESSION redis-setnx-px-lua-c1: throughput") {
		t.Fatalf("against a faster baseline: exit %d, want %d\n%s", code, exitUnsafe, out)
	}
	suite, b := readJUnit(t, junit)
	if suite.Tests != 2 || suite.Failures != 2 || len(suite.Cases) != 2 || suite.Cases[0].Failure == nil ||
		!strings.Contains(suite.Cases[0].Failure.Message, "regression: throughput") {
		t.Fatalf("junit: %+v\n%s", suite, b)
	}

	// Bad baselines and bounds: usage errors before any server starts.
	os.RemoveAll(results)
	for _, args := range [][]string{
		{"--baseline", filepath.Join(tmp, "missing.json")},
		{"--baseline", junit}, // not JSON
		{"--baseline", base, "--max-regression", "15"},
	} {
		if code, out := bench(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, out)
		}
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Errorf("a refused bench left %s behind", results)
	}
	waitNoServers(t, tmp)
}

// run --runs N --need K: misses of an expected violation are tolerated up
// to N-K; a violation that was not expected fails however many agreed.
func TestExitForRepeats(t *testing.T) {
	agree := verdict.Result{Status: verdict.Agrees}
	missed := verdict.Result{Status: verdict.Contradicts, Missed: true}
	unsafe := verdict.Result{Status: verdict.Contradicts}
	undecided := verdict.Result{Status: verdict.Undecided}
	for _, tt := range []struct {
		name string
		vs   []verdict.Result
		need int
		want int
		line string
	}{
		{"all agree", []verdict.Result{agree, agree, agree}, 0, exitOK, "as expected in 3 of 3 runs"},
		{"one miss, all needed", []verdict.Result{agree, missed, agree}, 0, exitUnsafe, "as expected in 2 of 3 runs (missed the expected outcome 1"},
		{"one miss, 2 needed", []verdict.Result{agree, missed, agree}, 2, exitOK, "as expected in 2 of 3 runs"},
		{"two misses, 2 needed", []verdict.Result{missed, missed, agree}, 2, exitUnsafe, "as expected in 1 of 3 runs"},
		{"unexpected violation, 1 needed", []verdict.Result{agree, unsafe, agree}, 1, exitUnsafe, "contradicted 1"},
		{"undecided short of need", []verdict.Result{agree, undecided, undecided}, 2, exitUndecided, "undecided 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs := make([]report.Run, len(tt.vs))
			for i := range runs {
				runs[i].Approach = "a"
			}
			var out, errb strings.Builder
			if got := exitForRepeats(runs, tt.vs, tt.need, &out, &errb); got != tt.want {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", got, tt.want, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.line) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.line)
			}
		})
	}
}

// TestExitFor: the single-run gate never passes what it did not verify; a
// contradiction outranks an undecided case.
func TestExitFor(t *testing.T) {
	agree := verdict.Result{Status: verdict.Agrees, Text: "a agrees"}
	unsafe := verdict.Result{Status: verdict.Contradicts, Text: "b double-granted"}
	undecided := verdict.Result{Status: verdict.Undecided, Text: "c never exercised"}
	for _, tt := range []struct {
		name string
		vs   []verdict.Result
		want int
		line string
	}{
		{"all agree", []verdict.Result{agree, agree}, exitOK, ""},
		{"one undecided", []verdict.Result{agree, undecided}, exitUndecided, "1 case(s) could not be verified: c never exercised"},
		{"contradiction and undecided", []verdict.Result{undecided, unsafe, agree}, exitUnsafe, "1 case(s) contradict their expectation: b double-granted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var errb strings.Builder
			if got := exitFor(tt.vs, &errb); got != tt.want {
				t.Errorf("exit %d, want %d (stderr %q)", got, tt.want, errb.String())
			}
			if !strings.Contains(errb.String(), tt.line) || (tt.line == "") != (errb.Len() == 0) {
				t.Errorf("stderr %q, want %q", errb.String(), tt.line)
			}
		})
	}
}

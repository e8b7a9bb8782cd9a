// Package regressions is the corpus of published lock bugs, one folder each:
// a scenario whose approaches are the library pinned to the version that
// had the bug and, where one exists, to the version that fixed it. The test
// runs every folder as `locklab run` would, each approach's case five
// times: the affected version must show its violation in at least four
// (a race is won most times, not always), the fixed one in none. A run
// that did not run as written (undecided, or a miss while a client was
// replaced or failed) is run again. Two folders run at a time.
package regressions

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/adapter"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/internal/keptdir"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/verdict"
)

const (
	runs = 5 // each approach's case
	need = 4 // runs that must agree: all five for a fixed version, any violation not expected fails it
)

func TestCorpus(t *testing.T) {
	scenarios, err := filepath.Glob("*/scenario.yaml")
	if err != nil || len(scenarios) == 0 {
		t.Fatalf("no regressions/*/scenario.yaml: %v", err)
	}
	// Two folders at a time: each starts servers of its own, and a folder
	// whose cases pause servers runs them one after another (curator-696,
	// 10 cases of about 22 s) while the other folders take their turns
	// beside it. Every folder starts at once and builds its Go adapters
	// (gobuild.sh builds one at a time on the machine) before it waits for
	// its turn, so the folders with nothing to build (curator-696 and
	// kazoo-732: Java and Python) run while the others build. The folders
	// are not t.Parallel subtests: -parallel's slots, taken by folders
	// waiting for their builds, held kazoo-732 back for 5 minutes (idle
	// make test, 2026-12-03).
	folders := make(chan struct{}, 2)
	var running sync.WaitGroup
	defer running.Wait()
	for _, path := range scenarios {
		running.Go(func() { t.Run(filepath.Dir(path), func(t *testing.T) { runCorpusFolder(t, path, folders) }) })
	}
}

// runCorpusFolder runs one folder of the corpus, once its adapters are
// built and its turn came (folders: the turns).
func runCorpusFolder(t *testing.T, path string, folders chan struct{}) {
	if err := buildAdapters(t, filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	folders <- struct{}{}
	defer func() { <-folders }()
	start := time.Now()
	reg := all.Registry()
	files, err := scenario.ApproachFiles(path)
	if err == nil {
		err = adapter.Register(reg, files)
	}
	if err == nil {
		// The shipped adapters (Curator, kazoo, ...) a folder may name
		// beside its own.
		err = adapter.RegisterShipped(reg, []string{"../approaches"})
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	results := keptdir.New(t, "locklab-regression-")
	names, verdicts := runFolder(t, reg, s, results, nil, s.Seed, runs)
	// A run whose expected violation was missed while a client was
	// replaced or failed (its worker retired: an indeterminate answer, a JVM
	// not ready when its caller gave up, both seen under load) or
	// while something stood still, or that was undecided, did not
	// run as written: it is run again,
	// with the next seeds, four times at most (curator-696 beside two
	// busy loops and three test packages: 3 of 5 runs replaced JVM
	// clients in the first round, 2 of 3 in the second, 1 of 2 in
	// the third). Need is never lowered, and a violation not
	// expected is never run again.
	seed := s.Seed + runs
	for round := 1; round <= 4; round++ {
		again := map[string]int{}
		var keptNames []ran
		var kept []verdict.Result
		for i, v := range verdicts {
			if notAsWritten(v, names[i]) {
				again[names[i].approach]++
				continue
			}
			keptNames, kept = append(keptNames, names[i]), append(kept, v)
		}
		if len(again) == 0 {
			break
		}
		for _, a := range slices.Sorted(maps.Keys(again)) {
			t.Logf("round %d: %s: %d runs did not run as written; again", round, a, again[a])
			n, v := runFolder(t, reg, s, results, []string{a}, seed, again[a])
			seed += uint64(again[a])
			keptNames, kept = append(keptNames, n...), append(kept, v...)
		}
		names, verdicts = keptNames, kept
	}
	approaches := make([]string, len(names))
	for i, n := range names {
		approaches[i] = n.approach
	}
	for _, n := range verdict.TallyBy(approaches, verdicts) {
		st := n.Tally.Status(verdict.Policy{Need: need})
		t.Logf("%s: as expected in %d of %d runs (missed %d, contradicted %d, undecided %d)",
			n.Name, n.Agreed, n.Runs, n.Missed, n.Contradicted, n.Undecided)
		if st != verdict.Agrees {
			t.Errorf("%s: %s: as expected in %d of %d runs, need %d (missed %d, contradicted %d, undecided %d)",
				n.Name, st, n.Agreed, n.Runs, need, n.Missed, n.Contradicted, n.Undecided)
		}
	}
	t.Logf("%s: %d cases in %v", s.Name, len(verdicts), time.Since(start).Round(time.Second))
}

// ran is one run's approach, how many of its clients were replaced, and
// whether a client failed (one that could not be replaced).
type ran struct {
	approach string
	replaced int64
	failed   bool
	// stalled: the lab's probes saw something stand still (locklab, a
	// server, an adapter) past the plan's stall threshold.
	stalled bool
}

// runFolder runs the scenario's approaches (all when nil) n times each,
// from seed on, and says what each run was and how it compared.
func runFolder(t *testing.T, reg *impls.Registry, s *scenario.Scenario, results string, approaches []string, seed uint64, n int) ([]ran, []verdict.Result) {
	t.Helper()
	p, err := runner.ScenarioPlan(reg, s, runner.ScenarioOptions{ResultsDir: results, Runs: n, Seed: &seed, Approaches: approaches})
	if err != nil {
		t.Fatal(err)
	}
	// The catch is the question here, not the lab's stalls: other
	// test packages share the machine.
	p.StallThreshold = 500 * time.Millisecond
	out, err := (&runner.Runner{Log: t.Logf, Parallel: true, MaxCases: 2}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]ran, len(out.Results.Runs))
	for i, r := range out.Results.Runs {
		names[i] = ran{r.Approach, r.Replaced, r.Errors > 0, len(r.Stalls) > 0}
		if v := out.Verdicts[i]; v.Status != verdict.Agrees {
			t.Logf("%s: %s: %s", r.Case, v.Status, v.Text)
		}
	}
	return names, out.Verdicts
}

// notAsWritten: the run missed its expected violation while a client was
// replaced or failed, or while something stood still (etcd-16221 beside two
// busy loops: the two runs of five that missed had its etcd members stand
// still 0.72 s, locklab 0.89 s and the adapters 0.77 s inside the waiter's
// pause; the three that caught it, nothing), or was undecided.
func notAsWritten(v verdict.Result, r ran) bool {
	return v.Status == verdict.Undecided || v.Status == verdict.Contradicts && v.Missed && (r.replaced > 0 || r.failed || r.stalled)
}

func TestNotAsWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    verdict.Result
		r    ran
		want bool
	}{
		{"caught", verdict.Result{Status: verdict.Agrees}, ran{replaced: 1}, false},
		{"missed, every client as started", verdict.Result{Status: verdict.Contradicts, Missed: true}, ran{}, false},
		{"missed with a client replaced", verdict.Result{Status: verdict.Contradicts, Missed: true}, ran{replaced: 1}, true},
		{"missed with a client that could not be replaced", verdict.Result{Status: verdict.Contradicts, Missed: true}, ran{failed: true}, true},
		{"a violation not expected, a client replaced", verdict.Result{Status: verdict.Contradicts}, ran{replaced: 2}, false},
		{"a violation not expected, a client failed", verdict.Result{Status: verdict.Contradicts}, ran{failed: true}, false},
		{"undecided", verdict.Result{Status: verdict.Undecided}, ran{}, true},
		{"missed while something stood still", verdict.Result{Status: verdict.Contradicts, Missed: true}, ran{stalled: true}, true},
		{"a violation not expected while something stood still", verdict.Result{Status: verdict.Contradicts}, ran{stalled: true}, false},
	} {
		if got := notAsWritten(tc.v, tc.r); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A pinned Go adapter's approach file says the library and version its
// go.mod requires: what locklab list shows is what is built.
func TestLibraryIsWhatGoModPins(t *testing.T) {
	scenarios, err := filepath.Glob("*/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range scenarios {
		files, err := scenario.ApproachFiles(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			spec, err := adapter.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(spec.Argv) != 2 || filepath.Base(spec.Argv[0]) != "gobuild.sh" {
				continue // not a Go adapter
			}
			mod, err := os.ReadFile(filepath.Join(spec.Dir, spec.Argv[1], "go.mod"))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if !regexp.MustCompile(`(?m)^(require )?\s*` + regexp.QuoteMeta(spec.Library) + `\s*$`).Match(mod) {
				t.Errorf("%s: library %q is not required as such by %s/go.mod", f, spec.Library, spec.Argv[1])
			}
		}
	}
}

// buildAdapters builds folder's pinned Go adapters (its VERSION/go.mod)
// before its runs, so that a first build's minute does not count against an
// adapter's start: the runs then find them in the cache.
func buildAdapters(t *testing.T, folder string) error {
	mods, err := filepath.Glob(filepath.Join(folder, "*", "go.mod"))
	if err != nil {
		return err
	}
	for _, m := range mods {
		dir := filepath.Dir(m)
		start := time.Now()
		out, err := exec.Command("sh", "gobuild.sh", dir, "--build-only").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", dir, err, strings.TrimSpace(string(out)))
		}
		t.Logf("adapter %s ready in %v", dir, time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

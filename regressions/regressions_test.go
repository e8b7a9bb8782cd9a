// Package regressions is the corpus of published lock bugs, one folder each:
// a scenario whose approaches are the library pinned to the version that
// had the bug and, where one exists, to the version that fixed it. The test
// runs every folder as `locklab run` would, each approach's case five
// times: the affected version must show its violation in at least four
// (a race is won most times, not always), the fixed one in none. Two
// folders run at a time.
package regressions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/adapter"
	"github.com/locklab/locklab/impls/all"
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
	// beside it. A folder's Go adapters are built before it takes its
	// turn, side by side with the folders running: on a cold build cache
	// they cost 4.5 minutes one after another, while curator-696 and
	// kazoo-732 (Java and Python, nothing to build) could have run.
	folders := make(chan struct{}, 2)
	for _, path := range scenarios {
		t.Run(filepath.Dir(path), func(t *testing.T) {
			t.Parallel()
			buildAdapters(t, filepath.Dir(path))
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
			p, err := runner.ScenarioPlan(reg, s, runner.ScenarioOptions{ResultsDir: keptIfFailed(t), Runs: runs})
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
			names := make([]string, len(out.Results.Runs))
			for i, r := range out.Results.Runs {
				names[i] = r.Approach
				if v := out.Verdicts[i]; v.Status != verdict.Agrees {
					t.Logf("%s: %s: %s", r.Case, v.Status, v.Text)
				}
			}
			for _, n := range verdict.TallyBy(names, out.Verdicts) {
				st := n.Tally.Status(verdict.Policy{Need: need})
				t.Logf("%s: as expected in %d of %d runs (missed %d, contradicted %d, undecided %d)",
					n.Name, n.Agreed, n.Runs, n.Missed, n.Contradicted, n.Undecided)
				if st != verdict.Agrees {
					t.Errorf("%s: %s: as expected in %d of %d runs, need %d (missed %d, contradicted %d, undecided %d)",
						n.Name, st, n.Agreed, n.Runs, need, n.Missed, n.Contradicted, n.Undecided)
				}
			}
			t.Logf("%s: %d cases in %v", s.Name, len(out.Verdicts), time.Since(start).Round(time.Second))
		})
	}
}

// keptIfFailed is a results folder removed after the test unless it
// failed: a folder whose race went the other way under load is read from
// its history, which a temp dir would take with it.
func keptIfFailed(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "locklab-regression-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
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
func buildAdapters(t *testing.T, folder string) {
	mods, err := filepath.Glob(filepath.Join(folder, "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		dir := filepath.Dir(m)
		start := time.Now()
		out, err := exec.Command("sh", "gobuild.sh", dir, "--build-only").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", dir, err, strings.TrimSpace(string(out)))
		}
		t.Logf("adapter %s ready in %v", dir, time.Since(start).Round(100*time.Millisecond))
	}
}

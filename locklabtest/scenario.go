package locklabtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/verdict"
)

// RunScenario runs the scenario in scenarioFile on a alone, on servers it
// starts and stops, and fails t with the verdict's words when a does not
// do what the file expects of it: a violation neither the file nor a rule
// of locklab's matrix predicts for a under the file's faults (as `locklab
// run` judges), an expected one that never showed, or a history that
// could not be checked. The message leads with the violations that
// decided it, one line per incident.
// The file's `approaches:` are not run: a is, so a shipped scenario serves
// as it is; its expectation for a is its entry for a by name, else for a
// capability a declares, else `*`. A file that expects nothing of a fails
// t: nothing is passed unjudged. Clients run as processes (see Main) when
// the file says so or a fault pauses or kills a client. Its results
// (history, plots, summary) are removed when the test passes; when it
// fails they are kept, and the test's log names their folder.
func RunScenario(t *testing.T, a impls.Approach, scenarioFile string) {
	t.Helper()
	runScenario(t, a, scenarioFile)
}

// tb is the part of *testing.T that RunScenario uses: its own tests give
// it a recorder, to prove it fails when it must.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Failed() bool
	Cleanup(func())
	Context() context.Context
}

func runScenario(t tb, a impls.Approach, scenarioFile string) {
	t.Helper()
	if err := check(a); err != nil {
		t.Fatalf("%v", err)
	}
	s, err := loadFor(scenarioFile, a)
	if err != nil {
		t.Fatalf("locklabtest: %v", err)
	}
	reg := impls.NewRegistry()
	reg.Register(a)
	results, err := resultsDir(t, s.Name)
	if err != nil {
		t.Fatalf("locklabtest: %v", err)
	}
	plan, err := runner.ScenarioPlan(reg, s, runner.ScenarioOptions{ResultsDir: results})
	if err != nil {
		t.Fatalf("locklabtest: %v", err)
	}
	for _, c := range plan.Cases {
		if len(c.Expect.Outcomes) == 0 && len(c.Expect.Forbidden) == 0 {
			t.Fatalf("locklabtest: scenario %s expects nothing of %s (no expect entry for it, for a capability it declares, or *): there is nothing to judge",
				s.Name, a.Name)
		}
		t.Logf("scenario %s: %s must show %s (%s)", s.Name, c.Name, c.Expect, c.Expect.Why)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("locklabtest: the test binary, to run clients as processes: %v", err)
	}
	r := &runner.Runner{Log: t.Logf, WorkerArgv: []string{exe, "-test.run=^$", workerFlag}}
	out, err := r.Run(t.Context(), plan)
	if err != nil {
		hint := ""
		if s.Processes {
			hint = " (its clients run as processes: does TestMain call locklabtest.Main with " + a.Name + "?)"
		}
		t.Fatalf("locklabtest: scenario %s: %v%s", s.Name, err, hint)
	}
	for i, v := range out.Verdicts {
		run := out.Results.Runs[i]
		switch v.Status {
		case verdict.Agrees:
			t.Logf("scenario %s, %s: %s", s.Name, run.Case, v.Text)
		case verdict.Undecided:
			t.Errorf("scenario %s, %s: not verified: %s", s.Name, run.Case, v.Text)
		default:
			t.Errorf("scenario %s, %s: %s%s", s.Name, run.Case, v.Text, violations(report.RunNotes(run)))
		}
	}
	t.Logf("scenario %s: results in %s", s.Name, out.Dir)
}

// resultsDir is a folder for the scenario's results that outlives the
// test when it fails (t.TempDir's would not), so its history and plots
// can be read; a passing test removes it.
func resultsDir(t tb, name string) (string, error) {
	dir, err := os.MkdirTemp("", "locklabtest-"+strings.ReplaceAll(name, string(os.PathSeparator), "-")+"-")
	if err != nil {
		return "", fmt.Errorf("a folder for the results: %w", err)
	}
	t.Cleanup(func() {
		if entries, _ := os.ReadDir(dir); t.Failed() && len(entries) > 0 {
			t.Logf("scenario %s: the test failed; its results are kept in %s", name, dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir, nil
}

func violations(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return "\n\t" + strings.Join(vs, "\n\t")
}

// loadFor loads the scenario for a alone. The file may name approaches
// this test binary does not have (the shipped scenarios name locklab's
// own): they are stood in for while the file is checked, and a is the one
// approach the scenario then has.
func loadFor(path string, a impls.Approach) (*scenario.Scenario, error) {
	reg := impls.NewRegistry()
	reg.Register(a)
	for _, stand := range standIns(path, a) {
		reg.Register(stand)
	}
	s, err := scenario.Load(path, reg)
	if err != nil {
		return nil, err
	}
	s.Approaches = []string{a.Name}
	return s, nil
}

// standIns are approaches named like those the file names, other than a:
// by name in approaches: and expect:, and one of each server kind written
// server:KIND. A file that does not read leaves none: scenario.Load then
// says what is wrong with it, with its line.
func standIns(path string, a impls.Approach) []impls.Approach {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var f struct {
		Approaches []string             `yaml:"approaches"`
		Expect     map[string]yaml.Node `yaml:"expect"`
	}
	if yaml.Unmarshal(b, &f) != nil {
		return nil
	}
	names := f.Approaches
	for k := range f.Expect {
		names = append(names, k)
	}
	seen := map[string]bool{a.Name: true}
	var out []impls.Approach
	for _, n := range names {
		if n == "*" || strings.HasPrefix(n, "cap:") || seen[n] {
			continue
		}
		seen[n] = true
		stand := impls.Approach{Name: n, Server: a.Server}
		if kind, ok := strings.CutPrefix(n, "server:"); ok {
			stand.Server = impls.Server(kind)
		}
		out = append(out, stand)
	}
	return out
}

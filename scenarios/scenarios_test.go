// Package scenarios holds the shipped scenario files; this test keeps each
// one loadable, runnable and self-explaining.
package scenarios

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
)

// Every shipped scenario loads, becomes a plan whose faults can act on their
// targets, opens with a comment saying what it shows, and states what each
// approach must show.
func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	reg := all.Registry()
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			s, err := scenario.Load(f, reg)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSuffix(f, ".yaml") != s.Name {
				t.Errorf("name %q differs from the file name", s.Name)
			}
			if len(s.Description) < 80 {
				t.Errorf("the opening comment must say what the scenario shows and why: %q", s.Description)
			}
			opt := runner.ScenarioOptions{ResultsDir: t.TempDir()}
			if s.Servers.In == "docker" {
				opt.Docker = &runner.Docker{}
			}
			p, err := runner.ScenarioPlan(reg, s, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Cases {
				if len(c.Expect.Outcomes) == 0 && len(c.Expect.Forbidden) == 0 {
					t.Errorf("%s: the scenario states nothing it must show", c.Name)
				}
			}
		})
	}
}

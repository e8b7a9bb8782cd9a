package explore

import (
	"fmt"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
)

// cases turns schedules into the runner's cases through their scenario
// files: scenario.Parse, then runner.ScenarioPlan, exactly as `locklab
// run` reads a file. What explore runs is therefore what a found file
// reproduces, and a fault the runner cannot take (a goroutine client
// cannot be paused, an etcd node's clock cannot be moved) is refused the
// same way.
type cases struct {
	reg      *impls.Registry
	external *cluster.ExternalConfig
	docker   *runner.Docker
}

// caseOf is schedule s as a case named name.
func (cs cases) caseOf(s Schedule, name string) (runner.Case, error) {
	b := s.Scenario(name)
	sc, err := scenario.Parse(b, cs.reg)
	if err != nil {
		return runner.Case{}, fmt.Errorf("schedule %s: %w", name, err)
	}
	p, err := runner.ScenarioPlan(cs.reg, sc, runner.ScenarioOptions{External: cs.external, Docker: cs.docker})
	if err != nil {
		return runner.Case{}, err
	}
	c := p.Cases[0]
	c.Name = name
	return c, nil
}

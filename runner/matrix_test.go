package runner

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
)

// On a Docker cluster, cells it cannot serve (the Sentinel topology runs
// only embedded) are n/a with the reason, and no case is planned for them;
// on embedded servers the same cell runs.
func TestMatrixPlanInDockerMarksWhatContainersCannotTake(t *testing.T) {
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		docker  *Docker
		applies bool
	}{{"embedded", nil, true}, {"docker", &Docker{}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			p, cells, err := MatrixPlan(reg, m, MatrixOptions{Approaches: []string{"redis-sentinel-lua", "redis-setnx-px-lua"},
				Faults: []string{"failover", "server-pause"}, Runs: 1, Docker: tc.docker})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cells {
				if c.Fault != "failover" || c.Approach != "redis-sentinel-lua" {
					continue
				}
				if c.Applies != tc.applies {
					t.Fatalf("failover cell applies: %v, want %v (why: %q)", c.Applies, tc.applies, c.Why)
				}
				if !tc.applies && !strings.Contains(c.Why, "--cluster docker") {
					t.Errorf("n/a cell says %q, want the reason naming --cluster docker", c.Why)
				}
			}
			failovers := 0
			for _, c := range p.Cases {
				if strings.HasPrefix(c.Name, "failover--redis-sentinel-lua--") {
					failovers++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.applies]; failovers != want {
				t.Errorf("%d failover cases planned, want %d", failovers, want)
			}
		})
	}
}

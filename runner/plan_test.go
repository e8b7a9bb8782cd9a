package runner

import (
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/internal/errtest"
	"github.com/locklab/locklab/workload"
)

func TestBenchConfigValidate(t *testing.T) {
	w := workload.Spec{Duration: 5 * time.Second, TTL: 10 * time.Second, AcquireTimeout: 10 * time.Second}
	with := func(mod func(*BenchConfig)) BenchConfig {
		c := BenchConfig{Workload: w}
		mod(&c)
		return c
	}
	for _, tc := range []struct {
		name    string
		c       BenchConfig
		wantErr string
	}{
		{"the defaults", BenchConfig{Workload: w}, ""},
		{"an open loop", with(func(c *BenchConfig) { c.Workload.Rate = 200 }), ""},
		{"client processes", with(func(c *BenchConfig) { c.Processes = true }), ""},
		{"a zero duration", with(func(c *BenchConfig) { c.Workload.Duration = 0 }), "--duration 0s: must be positive"},
		{"a zero ttl", with(func(c *BenchConfig) { c.Workload.TTL = 0 }), "--ttl 0s: must be positive"},
		{"a negative acquire timeout", with(func(c *BenchConfig) { c.Workload.AcquireTimeout = -time.Second }), "--acquire-timeout -1s: must be positive"},
		{"the duration first", with(func(c *BenchConfig) { c.Workload.Duration, c.Workload.TTL = -time.Second, 0 }), "--duration -1s"},
		{"a negative rate", with(func(c *BenchConfig) { c.Workload.Rate = -1 }), "--rate -1: want a positive rate, and not with --processes"},
		{"an open loop of processes", with(func(c *BenchConfig) { c.Workload.Rate, c.Processes = 5, true }), "--rate 5: want a positive rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errtest.Want(t, tc.c.Validate(), tc.wantErr)
		})
	}
}

// BenchPlan gives every case the config's Processes.
func TestBenchPlanProcesses(t *testing.T) {
	reg := impls.NewRegistry()
	reg.Register(memlock.NewService(1).Approach("memory"))
	for _, processes := range []bool{false, true} {
		p, err := BenchPlan(reg, BenchConfig{Approaches: []string{"memory"}, Clients: []int{1, 2}, Processes: processes,
			Workload: workload.Spec{Duration: time.Second, Keys: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Cases {
			if c.Processes != processes {
				t.Errorf("Processes %v: case %s has %v", processes, c.Name, c.Processes)
			}
		}
	}
}

// A case asks re-entry only of an approach that declares it, and a share
// of holds between 0 and 1.
func TestCaseValidateReentry(t *testing.T) {
	plain := memlock.NewService(1)
	reentrant := memlock.NewService(1)
	reentrant.Reentrant = true
	for _, tc := range []struct {
		name     string
		approach impls.Approach
		reentry  float64
		wantErr  string
	}{
		{"a re-entrant lock", reentrant.Approach("mem-reentrant"), 0.3, ""},
		{"no re-entry asked", plain.Approach("mem"), 0, ""},
		{"a lock that does not re-enter", plain.Approach("mem"), 0.3, "c: reentry 0.3 asks mem to re-enter, and it does not declare reentrant"},
		{"more than every hold", reentrant.Approach("mem-reentrant"), 1.5, "c: reentry is a share of holds from 0 to 1, got 1.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Case{Name: "c", Approach: tc.approach, Workload: workload.Spec{Clients: 1, Keys: 1, Duration: time.Second, Reentry: tc.reentry}}
			errtest.Want(t, c.Validate(), tc.wantErr)
		})
	}
}

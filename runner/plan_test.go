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

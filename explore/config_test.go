package explore

import (
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/internal/errtest"
)

func TestConfigValidate(t *testing.T) {
	reg := impls.NewRegistry()
	reg.Register(memlock.NewService(1).Approach("mem-a"))
	reg.Register(memlock.NewService(1).Approach("mem-b"))
	ok := Config{Registry: reg, Approaches: []string{"mem-a"}, Budget: time.Minute, Runs: 3, Parallel: 4}
	with := func(mod func(*Config)) Config {
		c := ok
		mod(&c)
		return c
	}
	for _, tc := range []struct {
		name    string
		c       Config
		wantErr string
	}{
		{"the command's defaults", ok, ""},
		{"the bounds", with(func(c *Config) { c.Runs, c.Parallel = 15, 64 }), ""},
		{"one at a time", with(func(c *Config) { c.Runs, c.Parallel = 1, 1 }), ""},
		{"no approach", with(func(c *Config) { c.Approaches = nil }), "--approach: which approach to explore (known: mem-a, mem-b)"},
		{"no approach, no registry", with(func(c *Config) { c.Approaches, c.Registry = nil, nil }), "--approach: which approach to explore (known: )"},
		{"a zero budget", with(func(c *Config) { c.Budget = 0 }), "--budget 0s: must be positive"},
		{"a negative budget", with(func(c *Config) { c.Budget = -time.Second }), "--budget -1s: must be positive"},
		{"no runs", with(func(c *Config) { c.Runs = 0 }), "--runs 0: want 1..15"},
		{"too many runs", with(func(c *Config) { c.Runs = 16 }), "--runs 16: want 1..15"},
		{"none at once", with(func(c *Config) { c.Parallel = 0 }), "--parallel 0: want 1..64"},
		{"too many at once", with(func(c *Config) { c.Parallel = 65 }), "--parallel 65: want 1..64"},
		{"stop after the first new finding", with(func(c *Config) { c.StopAfterNew = 1 }), ""},
		{"stop after a negative count", with(func(c *Config) { c.StopAfterNew = -1 }), "--stop-after-new -1: want 0 (search the whole budget) or more"},
		{"the approach first", with(func(c *Config) { c.Approaches, c.Budget, c.Runs = nil, 0, 0 }), "--approach"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errtest.Want(t, tc.c.Validate(), tc.wantErr)
		})
	}
}

// Run takes zero Runs and Parallel as their defaults: what it validates
// is the config with them filled.
func TestConfigWithDefaults(t *testing.T) {
	c := Config{Approaches: []string{"a"}, Budget: time.Minute}.withDefaults()
	if c.Runs != 3 || c.Parallel != DefaultParallel() {
		t.Errorf("defaults: %d runs, %d at once; want 3, %d", c.Runs, c.Parallel, DefaultParallel())
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if c := (Config{Runs: 5, Parallel: 2}).withDefaults(); c.Runs != 5 || c.Parallel != 2 {
		t.Errorf("given: %d runs, %d at once; want 5, 2", c.Runs, c.Parallel)
	}
}

package explore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/shard"
)

// The identity is the hash shard.json has always kept: shards of one
// exploration made by locklab versions on either side of a change merge.
func TestIdentityIsStable(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Approaches: []string{"a", "b", "c"}, Budget: time.Minute, Seed: 5}, "c1dd35ab4cd16523bcbfe765"},
		{Config{Approaches: []string{"redis-setnx-px-lua"}, Faults: []string{"client-pause", "server-pause"}, Budget: 10 * time.Minute,
			Seed: 1, Steer: true, Runs: 3, Parallel: 4, ResultsDir: "elsewhere", Command: "locklab explore"}, "0adf311dab4905bebc2085b0"},
	} {
		got, err := tc.c.Identity()
		if err != nil || got != tc.want {
			t.Errorf("Identity of %v: %s, %v; want %s", tc.c.Approaches, got, err, tc.want)
		}
	}
}

// At least N approaches: each shard its share under the seed; fewer:
// every approach under a seed of the shard's own.
func TestConfigShard(t *testing.T) {
	whole := func() Config { return Config{Approaches: []string{"a", "b", "c"}, Budget: time.Minute, Seed: 5} }
	seen := map[string]int{}
	for k := 1; k <= 2; k++ {
		c := whole()
		how, err := c.Shard(shard.Spec{K: k, N: 2})
		if err != nil || how != "its share of the approaches" || c.Seed != 5 || len(c.Approaches) == 0 {
			t.Fatalf("shard %d/2: %q, %v; %v under %d", k, how, err, c.Approaches, c.Seed)
		}
		for _, a := range c.Approaches {
			seen[a]++
		}
	}
	if len(seen) != 3 || seen["a"] != 1 || seen["b"] != 1 || seen["c"] != 1 {
		t.Errorf("approaches over 2 shards: %v", seen)
	}
	for k := 1; k <= 4; k++ {
		c := whole()
		how, err := c.Shard(shard.Spec{K: k, N: 4})
		wantSeed := 5 + uint64(k-1)<<32
		if err != nil || !slices.Equal(c.Approaches, whole().Approaches) || c.Seed != wantSeed {
			t.Fatalf("shard %d/4: %v; %v under %d, want all under %d", k, err, c.Approaches, c.Seed, wantSeed)
		}
		if want := fmt.Sprintf("every approach, under seeds of its own from %d", wantSeed); how != want {
			t.Errorf("shard %d/4 says %q, want %q", k, how, want)
		}
	}
}

package explore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/locklab/locklab/shard"
)

// shardSeedStride parts the seeds of shards exploring the same
// approaches: shard K's first is the seed plus (K-1) strides, far past the
// seed plus the approach's index an exploration gives each approach.
const shardSeedStride = 1 << 32

// identity is what makes an exploration the one it is, whatever its
// shard: shards of one have the same.
type identity struct {
	Approaches, Faults []string
	Budget             time.Duration
	Seed               uint64
	Steer              bool
	Runs               int
}

// Identity is a hash of what makes the exploration c the one it is,
// whatever its shard: shards of one have the same. Take it before Shard.
func (c Config) Identity() (string, error) {
	b, err := json.Marshal(identity{c.Approaches, c.Faults, c.Budget, c.Seed, c.Steer, c.Runs})
	if err != nil {
		return "", fmt.Errorf("the exploration's identity: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// Shard narrows c to shard s of the exploration: with at least s.N
// approaches, the shard's share of them (by name), under the seed; with
// fewer, all of them under a seed of the shard's own. It says which, in
// words.
func (c *Config) Shard(s shard.Spec) (string, error) {
	if len(c.Approaches) < s.N {
		c.Seed += uint64(s.K-1) * shardSeedStride
		return fmt.Sprintf("every approach, under seeds of its own from %d", c.Seed), nil
	}
	items := make([]shard.Item, len(c.Approaches))
	for i, a := range c.Approaches {
		items[i] = shard.Item{Key: a, Cost: c.Budget}
	}
	mine, err := shard.Pick(items, s)
	if err != nil {
		return "", err
	}
	var picked []string
	for _, i := range mine {
		picked = append(picked, c.Approaches[i])
	}
	c.Approaches = picked
	return "its share of the approaches", nil
}

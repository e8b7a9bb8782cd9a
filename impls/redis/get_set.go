package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// GetSetApproach: GET the key, and SET it if it was empty. Two commands,
// not atomic: two clients that both read "empty" both write and both think
// they hold the lock. A negative control: the lab must catch the race.
var GetSetApproach = impls.Approach{
	Name:     "redis-get-set",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true},
	Weak:     impls.Weaknesses{RacyAcquire: true},
	Safe:     false,
	Survives: "nothing: it breaks under plain contention",
	Summary:  "GET, then SET PX if the key was empty (check-then-set)",
	Fails:    "two clients read 'free' between each other's GET and SET: double grant with no fault at all",
	New: newSingle("redis-get-set", func(c *goredis.Client, clk clock.Clock) *single {
		return &single{client: c, clock: clk, try: getThenSet, release: delIfOwner, hasTTL: true}
	}),
}

func getThenSet(ctx context.Context, s *single, key, token string, ttl time.Duration) (bool, error) {
	err := s.client.Get(ctx, key).Err()
	switch {
	case err == nil:
		return false, nil // someone holds it
	case !errors.Is(err, goredis.Nil):
		return false, classify(ctx, "GET", err)
	}
	if err := s.client.Set(ctx, key, token, ttl).Err(); err != nil {
		return false, classify(ctx, "SET", err)
	}
	return true, nil
}

package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// SetNXApproach: SETNX with no TTL, DEL to release. Mutual exclusion holds
// while every client behaves, but a holder that crashes holds the lock
// forever, and DEL frees whoever holds the key.
var SetNXApproach = impls.Approach{
	Name:     "redis-setnx",
	Server:   impls.Redis,
	Nodes:    1,
	Weak:     impls.Weaknesses{NoExpiry: true, ReleaseNotOwnerChecked: true},
	Safe:     true,
	Survives: "nothing beyond well-behaved clients: a crashed holder blocks the key forever",
	Summary:  "SETNX key token (no TTL); DEL releases",
	Fails:    "a holder that crashes never releases: the key is locked until someone deletes it by hand",
	New: newSingle("redis-setnx", func(c *goredis.Client, clk clock.Clock) *single {
		return &single{client: c, clock: clk, try: setNX, release: plainDel}
	}),
}

func setNX(ctx context.Context, s *single, key, token string, _ time.Duration) (bool, error) {
	ok, err := s.client.SetNX(ctx, key, token, 0).Result()
	if err != nil {
		return false, classify(ctx, "SETNX", err)
	}
	return ok, nil
}

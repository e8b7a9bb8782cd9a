package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// SetNXPXGetDelApproach: SET NX PX; release GETs the key, compares the
// token, then DELs: two commands. If the lease expires between them and
// another client acquires, the DEL removes that client's lock.
var SetNXPXGetDelApproach = impls.Approach{
	Name:     "redis-setnx-px-getdel",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true},
	Weak:     impls.Weaknesses{ReleaseCheckNotAtomic: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock), as long as releases are fast next to the TTL",
	Summary:  "SET NX PX; release = GET, compare token, DEL (two commands)",
	Fails:    "the lease expires between GET and DEL, another client acquires, and the DEL removes its lock",
	New: newSingle("redis-setnx-px-getdel", func(c *goredis.Client, clk clock.Clock) *single {
		return &single{client: c, clock: clk, try: setNXPX, release: getCompareDel, hasTTL: true}
	}),
}

func getCompareDel(ctx context.Context, s *single, l *lease) error {
	v, err := s.client.Get(ctx, l.key).Result()
	switch {
	case errors.Is(err, goredis.Nil):
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	case err != nil:
		return classify(ctx, "GET", err)
	case v != l.token:
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	// The window: the key may have expired and been taken since the GET.
	if err := s.client.Del(ctx, l.key).Err(); err != nil {
		return classify(ctx, "DEL", err)
	}
	return nil
}

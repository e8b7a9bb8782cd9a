// The adapter of go-redsync/redsync v4.18.1 (the newest release the module
// proxy serves here), the Redlock library most Go code uses: one
// go-redis client per node handed over, a Mutex per acquire with redsync's
// own retry loop, UnlockContext on release.
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/regressions/goadapter"
)

func main() {
	goadapter.Run(func(h goadapter.Hello) (goadapter.Locker, error) {
		addrs := h.Servers["redis"]
		if len(addrs) < 3 {
			return nil, fmt.Errorf("redsync needs at least 3 redis nodes, have %d", len(addrs))
		}
		var pools []rsredis.Pool
		for _, a := range addrs {
			// MaxRetries -1: a retried SET NX whose first attempt landed
			// would read as "taken".
			pools = append(pools, rsgoredis.NewPool(goredis.NewClient(&goredis.Options{Addr: a, PoolSize: 1, MaxRetries: -1,
				DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})))
		}
		return &locker{rs: redsync.New(pools...)}, nil
	})
}

type locker struct{ rs *redsync.Redsync }

func (l *locker) Acquire(ctx context.Context, key string, ttl time.Duration, try bool) (goadapter.Held, error) {
	if ttl <= 0 {
		ttl = 8 * time.Second // redsync's own default
	}
	tries := math.MaxInt32
	if try {
		tries = 1
	}
	m := l.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(tries),
		redsync.WithRetryDelay(5*time.Millisecond))
	err := m.LockContext(ctx)
	var taken *redsync.ErrTaken
	switch {
	case err == nil:
		return &held{m: m}, nil
	case ctx.Err() != nil:
		// redsync answers ErrFailed whether or not the last round's SETs
		// landed.
		return nil, fmt.Errorf("lock: %w (%w)", err, ctx.Err())
	case errors.As(err, &taken), errors.Is(err, redsync.ErrFailed):
		return nil, fmt.Errorf("lock: %w: %w", goadapter.ErrNotAcquired, err)
	}
	return nil, fmt.Errorf("lock: %w", err)
}

type held struct{ m *redsync.Mutex }

func (h *held) Release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	var taken *redsync.ErrTaken
	switch {
	case ok:
		return nil
	case err == nil, errors.Is(err, redsync.ErrLockAlreadyExpired), errors.As(err, &taken):
		return fmt.Errorf("unlock: %w: %v", goadapter.ErrNotHeld, err)
	}
	return fmt.Errorf("unlock: %w", err)
}

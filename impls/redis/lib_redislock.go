package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// RedislockApproach adapts bsm/redislock, a popular single-node Redis lock
// library, next to redis-setnx-px-lua (the same algorithm, in Lua).
var RedislockApproach = impls.Approach{
	Name:     "lib-bsm-redislock",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true, Renewal: true},
	Safe:     true,
	Survives: "as redis-setnx-px-lua: client crashes",
	Summary:  "bsm/redislock: Lua SET NX PX obtain, Lua compare-and-delete release, on the first node",
	Fails:    "as redis-setnx-px-lua: a holder paused past its TTL, a failover or a clock jump",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		c, err := firstNode(ctx, "lib-bsm-redislock", env)
		if err != nil {
			return nil, err
		}
		return &Redislock{client: c, lib: redislock.New(c), clock: env.Clock}, nil
	},
}

// Redislock is one client of the adapter.
type Redislock struct {
	client *goredis.Client
	lib    *redislock.Client
	clock  clock.Clock
}

// Acquire makes one Obtain per attempt; impls.Poll paces the retries as
// for every polling approach, so the comparison is the library's round
// trip, not its retry strategy.
func (r *Redislock) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := ttlOf(opt)
	var lock *redislock.Lock
	var sent time.Time
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		sent = r.clock.Now()
		var err error
		lock, err = r.lib.Obtain(ctx, key, ttl, nil)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, redislock.ErrNotObtained):
			return false, nil
		default:
			return false, classify(ctx, "obtain", err)
		}
	})
	if err != nil {
		return nil, err
	}
	return &redislockLease{r: r, lock: lock, validUntil: sent.Add(ttl)}, nil
}

// Close drops the connection; locks expire.
func (r *Redislock) Close() error { return r.client.Close() }

type redislockLease struct {
	r          *Redislock
	lock       *redislock.Lock
	validUntil time.Time
}

func (l *redislockLease) Key() string           { return l.lock.Key() }
func (l *redislockLease) Token() (uint64, bool) { return 0, false }
func (l *redislockLease) ValidUntil() time.Time { return l.validUntil }
func (l *redislockLease) Lost() <-chan struct{} { return nil }

func (l *redislockLease) Release(ctx context.Context) error {
	err := l.lock.Release(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		return fmt.Errorf("release %s: %w", l.lock.Key(), impls.ErrNotHeld)
	default:
		return classify(ctx, "release", err)
	}
}

func (l *redislockLease) Extend(ctx context.Context, ttl time.Duration) error {
	sent := l.r.clock.Now()
	err := l.lock.Refresh(ctx, ttl, nil)
	switch {
	case err == nil:
		l.validUntil = sent.Add(ttl)
		return nil
	case errors.Is(err, redislock.ErrNotObtained):
		return fmt.Errorf("extend %s: %w", l.lock.Key(), impls.ErrNotHeld)
	default:
		return classify(ctx, "refresh", err)
	}
}

package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// RedsyncApproach adapts go-redsync/redsync, the Redlock library most Go
// code uses, to the lab's interface: same servers, same settings as
// redis-redlock, for a side-by-side comparison.
var RedsyncApproach = impls.Approach{
	Name:     "lib-redsync",
	Server:   impls.Redis,
	Caps:     impls.Capabilities{TTL: true, FaultTolerant: true},
	Safe:     true,
	Survives: "as redis-redlock: a minority of nodes lost, client crashes",
	Summary:  "go-redsync/redsync v4 (Redlock) over the 5 independent masters",
	Fails:    "as redis-redlock; its errors do not say whether a timed-out acquire landed (the adapter reports it indeterminate), and Extend only resets the original expiry",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if len(env.Endpoints[impls.Redis].Addrs) < 3 {
			return nil, fmt.Errorf("lib-redsync: need at least 3 independent redis nodes, have %d", len(env.Endpoints[impls.Redis].Addrs))
		}
		// The library needs a quorum at work, like redis-redlock.
		probe := &Redlock{clock: env.Clock, workers: newWorkers()}
		for _, a := range env.Endpoints[impls.Redis].Addrs {
			probe.nodes = append(probe.nodes, newClientNoPing(a))
		}
		if down := probe.down(ctx); len(probe.nodes)-down < probe.quorum() {
			probe.Close()
			return nil, fmt.Errorf("lib-redsync: %w: %d of %d nodes refuse connections", impls.ErrUnavailable, down, len(probe.nodes))
		}
		var pools []rsredis.Pool
		for _, c := range probe.nodes {
			pools = append(pools, rsgoredis.NewPool(c))
		}
		return &Redsync{rs: redsync.New(pools...), probe: probe, clock: env.Clock}, nil
	},
}

// down counts the nodes that certainly cannot be reached (the connection
// is refused); a node that is merely slow to answer is not counted.
func (r *Redlock) down(ctx context.Context) int {
	res := r.onAll(ctx, r.all(), 300*time.Millisecond, func(ctx context.Context, _ int, c *goredis.Client) (bool, error) {
		return true, c.Ping(ctx).Err()
	})
	n := 0
	for _, x := range res {
		if errors.Is(x.err, impls.ErrUnavailable) {
			n++
		}
	}
	return n
}

// Redsync is one client of the adapter.
type Redsync struct {
	rs    *redsync.Redsync
	probe *Redlock // the same connections, for telling "down" from "taken"
	clock clock.Clock
}

// Acquire locks with redsync's own retry loop, bounded by ctx.
func (r *Redsync) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := ttlOf(opt)
	tries := math.MaxInt32
	if opt.Try {
		tries = 1
	}
	m := r.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(tries),
		redsync.WithRetryDelayFunc(func(int) time.Duration { return time.Duration(rand.Int64N(int64(5 * time.Millisecond))) }))
	err := m.LockContext(ctx)
	if err == nil {
		return &redsyncLease{m: m, key: key, ttl: ttl, clock: r.clock}, nil
	}
	if len(r.probe.nodes)-r.probe.down(context.Background()) < r.probe.quorum() {
		return nil, fmt.Errorf("lib-redsync %s: %w: %w", key, impls.ErrUnavailable, err)
	}
	var taken *redsync.ErrTaken
	switch {
	case impls.Expired(ctx) != nil:
		// redsync answers ErrFailed whether or not the last round's SETs
		// landed; the lab cannot know either.
		return nil, fmt.Errorf("lib-redsync %s: %w: %w (%w)", key, impls.ErrIndeterminate, err, impls.Expired(ctx))
	case errors.As(err, &taken), errors.Is(err, redsync.ErrFailed):
		return nil, fmt.Errorf("%w: %s: %w", impls.ErrNotAcquired, key, err)
	default:
		return nil, fmt.Errorf("lib-redsync %s: %w: %w", key, impls.ErrIndeterminate, err)
	}
}

// Close drops every connection.
func (r *Redsync) Close() error { return r.probe.Close() }

type redsyncLease struct {
	m     *redsync.Mutex
	key   string
	ttl   time.Duration
	clock clock.Clock // the client's lease clock
}

func (l *redsyncLease) Key() string           { return l.key }
func (l *redsyncLease) Token() (uint64, bool) { return 0, false }

// ValidUntil moves redsync's expiry, which it keeps on the machine's clock
// (time.Now), onto the client's lease clock, where the lab reads beliefs:
// redsync itself never sees a skewed client clock.
func (l *redsyncLease) ValidUntil() time.Time {
	until := l.m.Until()
	if until.IsZero() {
		return until
	}
	return l.clock.Now().Add(time.Until(until))
}
func (l *redsyncLease) Lost() <-chan struct{} { return nil }

func (l *redsyncLease) Release(ctx context.Context) error {
	ok, err := l.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case err == nil, errors.Is(err, redsync.ErrLockAlreadyExpired):
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	default:
		var taken *redsync.ErrTaken
		if errors.As(err, &taken) {
			return fmt.Errorf("release %s: %w: %w", l.key, impls.ErrNotHeld, err)
		}
		return fmt.Errorf("release %s: %w: %w", l.key, impls.ErrIndeterminate, err)
	}
}

// Extend works only for the TTL the lock was taken with: redsync's
// ExtendContext resets the original expiry and takes no other.
func (l *redsyncLease) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl != l.ttl {
		return fmt.Errorf("extend %s: redsync only resets its original expiry %v, not %v: %w", l.key, l.ttl, ttl, impls.ErrUnsupported)
	}
	ok, err := l.m.ExtendContext(ctx)
	if ok {
		return nil
	}
	return fmt.Errorf("extend %s: %w: %v", l.key, impls.ErrNotHeld, err)
}

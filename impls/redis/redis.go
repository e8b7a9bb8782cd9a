// Package redis holds the Redis lock approaches, one file each.
package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// Register adds every Redis approach to r.
func Register(r *impls.Registry) {
	r.Register(GetSetApproach)
	r.Register(SetNXApproach)
	r.Register(SetNXPXDelApproach)
	r.Register(SetNXPXGetDelApproach)
	r.Register(SetNXPXLuaApproach)
	r.Register(ReentrantApproach)
	r.Register(FairApproach)
	r.Register(WatchdogApproach)
	r.Register(PubSubApproach)
	r.Register(HandOffApproach)
	r.Register(RedlockApproach)
	r.Register(RedlockQuorumApproach)
	r.Register(RedsyncApproach)
	r.Register(RedislockApproach)
	r.Register(SentinelLuaApproach)
	r.Register(SentinelLuaWaitApproach)
}

// DefaultTTL is the lease length when AcquireOptions.TTL is zero.
const DefaultTTL = 10 * time.Second

// maxKeyLen keeps keys sane; Redis itself would take 512 MB.
const maxKeyLen = 1024

func checkKey(key string) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("%w: redis key must be 1..%d bytes, got %d", impls.ErrInvalidKey, maxKeyLen, len(key))
	}
	return nil
}

// newClient connects one lock client to one node, as its own process would:
// a single connection, no retries (a retried SET NX whose first attempt
// succeeded would report "not set"), and context deadlines on the socket.
func newClient(ctx context.Context, addr string) (*goredis.Client, error) {
	c := newClientNoPing(addr)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis %s: %w: %w", addr, impls.ErrUnavailable, err)
	}
	return c, nil
}

// newClientNoPing configures the client without touching the server.
func newClientNoPing(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		Protocol:              2, // no HELLO round trip on connect
		DisableIdentity:       true,
		MaxRetries:            -1,
		PoolSize:              1,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           3 * time.Second,
		WriteTimeout:          3 * time.Second,
		ContextTimeoutEnabled: true,
	})
}

// classify maps a failed command to the lab's outcomes. A command that could
// not even connect changed nothing (unavailable); anything else after the
// request may have been written (timeouts, resets) is indeterminate.
func classify(ctx context.Context, op string, err error) error {
	switch {
	case impls.DialFailed(err):
		return impls.DialOutcome(ctx, op, err)
	case isRedisError(err):
		return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
	case impls.Expired(ctx) != nil:
		// The deadline struck mid-command; the driver may report it as a
		// socket timeout, so say both.
		return fmt.Errorf("%s: %w: %w (%w)", op, impls.ErrIndeterminate, err, impls.Expired(ctx))
	default:
		return fmt.Errorf("%s: %w: %w", op, impls.ErrIndeterminate, err)
	}
}

// isRedisError reports an error reply from the server (the command was
// refused, so it did not take effect).
func isRedisError(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && !errors.Is(err, goredis.Nil)
}

func ttlOf(opt impls.AcquireOptions) time.Duration {
	if opt.TTL <= 0 {
		return DefaultTTL
	}
	return opt.TTL
}

// lease is a granted lock whose release and extend are the approach's own.
type lease struct {
	key, token string
	validUntil time.Time
	nodes      []bool  // Redlock: the nodes sent our token
	landed     landing // Redlock: when each node's SET answered
	release    func(ctx context.Context, l *lease) error
	extend     func(ctx context.Context, l *lease, ttl time.Duration) error
}

func (l *lease) Key() string                       { return l.key }
func (l *lease) Token() (uint64, bool)             { return 0, false }
func (l *lease) ValidUntil() time.Time             { return l.validUntil }
func (l *lease) Lost() <-chan struct{}             { return nil }
func (l *lease) Release(ctx context.Context) error { return l.release(ctx, l) }
func (l *lease) Extend(ctx context.Context, ttl time.Duration) error {
	if l.extend == nil {
		return fmt.Errorf("extend %s: %w", l.key, impls.ErrUnsupported)
	}
	return l.extend(ctx, l, ttl)
}

// delIfOwner is the atomic compare-and-delete release (Lua).
func delIfOwner(ctx context.Context, s *single, l *lease) error {
	n, err := compareAndDelete.Run(ctx, s.client, []string{l.key}, l.token).Int()
	if err != nil {
		return classify(ctx, "release", err)
	}
	if n == 0 {
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	return nil
}

// plainDel releases by DEL, whoever holds the key now.
func plainDel(ctx context.Context, s *single, l *lease) error {
	n, err := s.client.Del(ctx, l.key).Result()
	if err != nil {
		return classify(ctx, "DEL", err)
	}
	if n == 0 {
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	return nil
}

// single is the common shape of the one-node approaches: one client, one
// acquire attempt, one way to release and optionally one to extend.
type single struct {
	client  *goredis.Client
	clock   clock.Clock
	try     func(ctx context.Context, s *single, key, token string, ttl time.Duration) (bool, error)
	release func(ctx context.Context, s *single, l *lease) error
	extend  func(ctx context.Context, s *single, l *lease, ttl time.Duration) error // nil: no renewal
	hasTTL  bool
}

func (s *single) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := ttlOf(opt)
	token := impls.NewToken()
	var sent time.Time
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		// Validity counts from before the request: the server's TTL starts
		// later, so the client never believes in a longer lease than the
		// server keeps (absent clock faults).
		sent = s.clock.Now()
		return s.try(ctx, s, key, token, ttl)
	})
	if err != nil {
		return nil, err
	}
	l := &lease{key: key, token: token, release: func(ctx context.Context, l *lease) error { return s.release(ctx, s, l) }}
	if s.hasTTL {
		l.validUntil = sent.Add(ttl)
	}
	if s.extend != nil {
		l.extend = func(ctx context.Context, l *lease, ttl time.Duration) error { return s.extend(ctx, s, l, ttl) }
	}
	return l, nil
}

// Close drops the connection and leaves every lease as it is, as a crash would.
func (s *single) Close() error { return s.client.Close() }

// scriptLease is a lease of a one-node lock whose release is a script of
// its own and whose extend is the compare-and-PEXPIRE of the Lua lock.
func scriptLease(c *goredis.Client, clk clock.Clock, key, token string, validUntil time.Time, release func(context.Context, *lease) error) *lease {
	return &lease{key: key, token: token, validUntil: validUntil, release: release,
		extend: func(ctx context.Context, l *lease, ttl time.Duration) error {
			return pexpireIfOwner(ctx, &single{client: c, clock: clk}, l, ttl)
		}}
}

// runRelease runs a release script that answers 0 when l's key is no
// longer l's.
func runRelease(ctx context.Context, c *goredis.Client, script *goredis.Script, l *lease, keys []string, args ...any) error {
	n, err := script.Run(ctx, c, keys, args...).Int()
	if err != nil {
		return classify(ctx, "release", err)
	}
	if n == 0 {
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	return nil
}

// newSingle builds the constructor of a one-node approach.
func newSingle(name string, mk func(c *goredis.Client, clk clock.Clock) *single) func(context.Context, impls.Env) (impls.Locker, error) {
	return func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		c, err := firstNode(ctx, name, env)
		if err != nil {
			return nil, err
		}
		return mk(c, env.Clock), nil
	}
}

// firstNode connects approach name's client to the first Redis node, the
// one every single-node approach uses.
func firstNode(ctx context.Context, name string, env impls.Env) (*goredis.Client, error) {
	if len(env.Endpoints[impls.Redis].Addrs) == 0 {
		return nil, fmt.Errorf("%s: no redis endpoint", name)
	}
	return newClient(ctx, env.Endpoints[impls.Redis].Addrs[0])
}

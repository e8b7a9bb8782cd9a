package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// SetNXPXLuaApproach: SET key token NX PX ttl; release and extend only if the
// stored token is still ours, atomically in Lua. The standard single-node
// Redis lock: safe while the node neither fails over nor jumps its clock, and
// while no holder outlives its TTL (a pause longer than the TTL lets a second
// client in; there is no fencing token to stop the first).
var SetNXPXLuaApproach = impls.Approach{
	Name:     "redis-setnx-px-lua",
	Backend:  impls.Redis,
	Caps:     impls.Capabilities{TTL: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock); not a restart without persistence, failover or a clock jump",
	Summary:  "SET NX PX with a random token; Lua compare-and-delete release",
	Fails:    "a holder paused past its TTL keeps writing while another holds the lock (no fencing)",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if len(env.Endpoints.Redis) == 0 {
			return nil, fmt.Errorf("redis-setnx-px-lua: no redis endpoint")
		}
		c, err := newClient(ctx, env.Endpoints.Redis[0])
		if err != nil {
			return nil, err
		}
		return &SetNXPXLua{client: c, clock: env.Clock}, nil
	},
}

var (
	compareAndDelete = goredis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
	compareAndPExpire = goredis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
)

// SetNXPXLua is one client of the approach.
type SetNXPXLua struct {
	client *goredis.Client
	clock  clock.Clock
}

// Acquire polls SET NX PX until it succeeds or ctx ends.
func (l *SetNXPXLua) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	token := newToken()
	backoff := impls.DefaultBackoff()
	for {
		// Validity counts from before the request: the server's TTL starts
		// later than this, so the client never believes in a lease longer
		// than the server keeps it (absent clock faults).
		sent := l.clock.Now()
		ok, err := l.client.SetNX(ctx, key, token, ttl).Result()
		if err != nil {
			return nil, classify("SET NX PX", err)
		}
		if ok {
			return &luaLease{l: l, key: key, token: token, validUntil: sent.Add(ttl)}, nil
		}
		if opt.Try {
			return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
		}
		if err := backoff.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// Close drops the connection and leaves every lease to expire.
func (l *SetNXPXLua) Close() error { return l.client.Close() }

type luaLease struct {
	l          *SetNXPXLua
	key, token string
	validUntil time.Time
}

func (s *luaLease) Key() string           { return s.key }
func (s *luaLease) Token() (uint64, bool) { return 0, false }
func (s *luaLease) ValidUntil() time.Time { return s.validUntil }
func (s *luaLease) Lost() <-chan struct{} { return nil }
func (s *luaLease) OwnerToken() string    { return s.token }

func (s *luaLease) Release(ctx context.Context) error {
	n, err := compareAndDelete.Run(ctx, s.l.client, []string{s.key}, s.token).Int()
	if err != nil {
		return classify("release", err)
	}
	if n == 0 {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	return nil
}

func (s *luaLease) Extend(ctx context.Context, ttl time.Duration) error {
	sent := s.l.clock.Now()
	n, err := compareAndPExpire.Run(ctx, s.l.client, []string{s.key}, s.token, ttl.Milliseconds()).Int()
	if err != nil {
		return classify("extend", err)
	}
	if n == 0 {
		return fmt.Errorf("extend %s: %w", s.key, impls.ErrNotHeld)
	}
	s.validUntil = sent.Add(ttl)
	return nil
}

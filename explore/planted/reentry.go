package planted

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// ReentryKeepsTTL is a re-entrant lock in the manner of Redisson's RLock:
// a hash of owner to hold count, one TTL for the key, and in the client
// one record per key it holds, which every lease of the key reads its
// expiry from. Its re-entry counts one hold more but leaves the key's TTL
// where it was, while the client takes the re-entry's grant for a reset
// TTL, as it does a first grant.
// A careful holder that re-enters halfway through its work then believes
// in a lease the server does not keep: it works on past the key's expiry,
// and a waiter is granted the key while the holder's lease is valid by
// its own reckoning. No fault is needed; no run without re-entry shows it.
var ReentryKeepsTTL = impls.Approach{
	Name: "planted-reentry-keeps-ttl", Server: impls.Redis, Nodes: 1,
	Caps:    impls.Capabilities{TTL: true, Renewal: true, Reentrant: true},
	Safe:    true, // as its author believes
	Summary: "Lua hash of owner to hold count with a TTL; planted mistake: a re-entry does not reset the TTL it tells the holder it has",
	Fails:   "a re-entry does not reset the TTL it tells the holder it has (planted for locklab explore's tests)",
	New: func(_ context.Context, env impls.Env) (impls.Locker, error) {
		if len(env.Endpoints[impls.Redis].Addrs) == 0 {
			return nil, fmt.Errorf("planted-reentry-keeps-ttl: no redis endpoint")
		}
		return &hashLocker{c: redisClient(env), clk: env.Clock, owner: fmt.Sprintf("client-%d-%s", env.ClientID, impls.NewToken()),
			held: map[string]*heldKey{}}, nil
	},
}

var (
	// hashAcquire takes a free key (hold count 1, TTL ARGV[2] ms) or
	// counts the owner's re-entry; the planted mistake is the re-entry's
	// missing PEXPIRE. It returns the owner's holds, 0 when another owns
	// the key.
	hashAcquire = goredis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("HSET", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  return redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
end
return 0`)
	// hashRelease gives one hold back and deletes the key at the last:
	// the holds left, -1 when the owner held nothing.
	hashRelease = goredis.NewScript(`
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return -1
end
local n = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if n <= 0 then
  redis.call("DEL", KEYS[1])
  return 0
end
return n`)
	// hashExtend resets the TTL while the owner holds the key.
	hashExtend = goredis.NewScript(`
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
)

type hashLocker struct {
	c     *goredis.Client
	clk   clock.Clock
	owner string
	mu    sync.Mutex          // guards held and what it points to
	held  map[string]*heldKey // the keys this client holds
}

// heldKey is what the client knows of a key it holds: one expiry for all
// its leases, as the key has one TTL.
type heldKey struct {
	leases     int
	validUntil time.Time
}

type hashLease struct {
	l    *hashLocker
	key  string
	held *heldKey
}

func (l *hashLocker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	var sent time.Time
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		sent = l.clk.Now()
		n, err := hashAcquire.Run(ctx, l.c, []string{key}, l.owner, ttl.Milliseconds()).Int()
		if err != nil {
			return false, outcome(ctx, "acquire", err)
		}
		return n > 0, nil
	})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[key]
	if h == nil {
		h = &heldKey{}
		l.held[key] = h
	}
	h.leases++
	h.validUntil = sent.Add(ttl) // believed reset, by a re-entry too
	return &hashLease{l: l, key: key, held: h}, nil
}

func (l *hashLocker) Close() error { return l.c.Close() }

func (s *hashLease) Key() string           { return s.key }
func (s *hashLease) Token() (uint64, bool) { return 0, false }
func (s *hashLease) ValidUntil() time.Time {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	return s.held.validUntil
}
func (s *hashLease) Lost() <-chan struct{} { return nil }

func (s *hashLease) Release(ctx context.Context) error {
	s.l.mu.Lock()
	if s.held.leases--; s.held.leases == 0 && s.l.held[s.key] == s.held {
		delete(s.l.held, s.key)
	}
	s.l.mu.Unlock()
	n, err := hashRelease.Run(ctx, s.l.c, []string{s.key}, s.l.owner).Int()
	if err != nil {
		return outcome(ctx, "release", err)
	}
	if n < 0 {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	return nil
}

func (s *hashLease) Extend(ctx context.Context, ttl time.Duration) error {
	sent := s.l.clk.Now()
	n, err := hashExtend.Run(ctx, s.l.c, []string{s.key}, s.l.owner, ttl.Milliseconds()).Int()
	if err != nil {
		return outcome(ctx, "extend", err)
	}
	if n == 0 {
		return fmt.Errorf("extend %s: %w", s.key, impls.ErrNotHeld)
	}
	s.l.mu.Lock()
	s.held.validUntil = sent.Add(ttl)
	s.l.mu.Unlock()
	return nil
}

// Package planted holds lock approaches on real Redis that are broken on
// purpose, each in a way only a particular fault timing reveals: they
// prove that locklab explore finds what nobody told it about. They are
// kept for tests only: the tests that need them register them (and
// cmd/planted serves one over the lock client protocol, for an approach
// file outside the repository); impls/all, `locklab list` and the matrix
// never see them, and no expectation is written for them.
//
// Each one is redis-setnx-px-lua (SET key token NX PX ttl; a Lua
// compare-and-delete release and compare-and-pexpire renewal) with one
// mistake of the kind lock users report.
package planted

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// Approaches are the planted approaches.
func Approaches() []impls.Approach {
	return []impls.Approach{UncheckedRelease, CachedHold, ValidityFromReply, RenewAfterRelease, ExpireAfterSet, ReentryKeepsTTL, UncheckedExtend,
		WaiterOverwrites, RenewalFromMemory}
}

// Register adds the planted approaches to reg.
func Register(reg *impls.Registry) {
	for _, a := range Approaches() {
		reg.Register(a)
	}
}

// UncheckedRelease gives its compare-and-delete release a short deadline
// of its own, and when that passes, "makes sure" the lock is gone with a
// plain DEL. Whenever a release's reply comes late (a slow link, a lost
// reply), the compare-and-delete has already freed the lock, another
// client has taken it, and the DEL deletes that client's lock: a third
// client is then granted it while the second's lease is valid.
var UncheckedRelease = approach("planted-release-unchecked",
	"a release whose compare-and-delete times out is retried as a plain DEL",
	func(l *locker) { l.release = l.releaseThenDel })

// CachedHold remembers which keys it holds so that acquiring one again is
// free (no round trip), and forgets a key only when its release succeeds.
// When a release finds the lock already gone (its lease ran out while the
// holder was paused or cut off, the server lost it), the cache still says
// "held", and the client's next acquire of that key answers yes at once,
// with a fresh lease, while another client holds it.
var CachedHold = approach("planted-cached-hold",
	"acquire trusts a cached \"I hold it\" that a failed release left behind",
	func(l *locker) { l.cache = map[string]string{} })

// ValidityFromReply counts a lease's validity from when the grant's reply
// arrived instead of from when the request was sent. A slow reply makes
// the holder believe in a lease longer than the server keeps: a careful
// holder that stops when its lease runs out by its own reckoning still
// works on after the server let the key expire and granted it again.
var ValidityFromReply = approach("planted-validity-from-reply",
	"the lease's validity is counted from the reply, not the request",
	func(l *locker) { l.fromReply = true })

// RenewAfterRelease is a lock in the manner of Redisson's: its value is
// the client's own id, so the client acquires a key it holds again at
// once (reentrant), and a watchdog re-asserts the lock every third of
// its TTL (SET key id PX ttl). The watchdog is stopped only once the
// release's reply is back; a tick that falls while the reply is late
// re-asserts the lock just after the release deleted it, over whoever
// took it meanwhile, and the client's next acquire finds its own id
// there and is granted while that client holds it (Redisson #7272, a
// renewal outliving unlock()).
var RenewAfterRelease = approach("planted-renew-after-release",
	"a watchdog re-asserts the lock until the release's reply is back, and a client holding the key acquires it again",
	func(l *locker) { l.watchdog = true })

// ExpireAfterSet takes the lock with SETNX and gives it its TTL with a
// PEXPIRE after (two commands, as the seed articles' first Redis lock
// does). When the SETNX's reply is lost, or the client dies between the
// two, the key stays with no TTL: held for ever by nobody, and no client
// is granted it again.
var ExpireAfterSet = approach("planted-expire-after-set",
	"the lock is taken with SETNX and given its TTL by a PEXPIRE sent after",
	func(l *locker) { l.expireAfter = true })

// UncheckedExtend renews a lease with a plain PEXPIRE, without comparing
// the token: once its holder's lease ran out (a pause, a slow reply) and
// another client took the key, the holder's next renewal answers ok and
// lengthens the other's lock, and the holder believes in a fresh lease.
var UncheckedExtend = approach("planted-extend-unchecked",
	"an extend renews whatever lock the key holds (PEXPIRE, no token compared)",
	func(l *locker) { l.extendUnchecked = true })

func approach(name, mistake string, plant func(*locker)) impls.Approach {
	return impls.Approach{
		Name: name, Server: impls.Redis, Nodes: 1,
		Caps:    impls.Capabilities{TTL: true, Renewal: true},
		Safe:    true, // as its author believes
		Summary: "SET NX PX, Lua compare-and-delete release; planted mistake: " + mistake,
		Fails:   mistake + " (planted for locklab explore's tests)",
		New: func(_ context.Context, env impls.Env) (impls.Locker, error) {
			if len(env.Endpoints[impls.Redis].Addrs) == 0 {
				return nil, fmt.Errorf("%s: no redis endpoint", name)
			}
			l := &locker{c: redisClient(env), clk: env.Clock, id: fmt.Sprintf("client-%d-%s", env.ClientID, impls.NewToken())}
			l.release = l.compareAndDelete
			plant(l)
			return l, nil
		},
	}
}

// redisClient is a planted approach's connection to its Redis node. It
// connects at its first command: a client started while the server is
// down (a replacement during a server-kill) is told so by its commands,
// and an adapter of it still starts.
func redisClient(env impls.Env) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: env.Endpoints[impls.Redis].Addrs[0], Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, PoolSize: 1, DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second,
		WriteTimeout: 3 * time.Second, ContextTimeoutEnabled: true})
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
	// reentrantAcquire grants the key to the client whose id it holds
	// already, or to anyone when it is free.
	reentrantAcquire = goredis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return 1
end
return 0`)
)

// releaseDeadline is UncheckedRelease's own deadline on its
// compare-and-delete.
const releaseDeadline = 100 * time.Millisecond

type locker struct {
	c               *goredis.Client
	clk             clock.Clock
	release         func(ctx context.Context, l *lease) error
	fromReply       bool
	expireAfter     bool   // ExpireAfterSet
	extendUnchecked bool   // UncheckedExtend
	overwriteLate   bool   // WaiterOverwrites
	renewFromMemory bool   // RenewalFromMemory
	watchdog        bool   // RenewAfterRelease
	id              string // RenewAfterRelease: the client's id, every lock's value
	mu              sync.Mutex
	cache           map[string]string // CachedHold: key -> token of a lock it believes it holds
}

type lease struct {
	l          *locker
	key, token string
	stop       chan struct{} // RenewAfterRelease: ends its watchdog
	mu         sync.Mutex    // guards validUntil and setAt (RenewAfterRelease's watchdog moves validUntil)
	validUntil time.Time
	setAt      time.Time // RenewalFromMemory: when the last round trip that set the key's TTL was sent
}

func (l *locker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	if tok, ok := l.cached(key); ok {
		return &lease{l: l, key: key, token: tok, validUntil: l.clk.Now().Add(ttl)}, nil
	}
	token := impls.NewToken()
	if l.watchdog {
		token = l.id
	}
	// sent counts the lease; setAt, by the monotonic clock, is
	// RenewalFromMemory's last round trip that set the key's TTL.
	var sent, setAt time.Time
	waited := false // WaiterOverwrites: a poll of this acquire found the key held
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		sent, setAt = l.clk.Now(), time.Now()
		if l.watchdog {
			n, err := reentrantAcquire.Run(ctx, l.c, []string{key}, token, ttl.Milliseconds()).Int()
			if err != nil {
				return false, outcome(ctx, "acquire", err)
			}
			return n == 1, nil
		}
		if l.expireAfter {
			ok, err := l.c.SetNX(ctx, key, token, 0).Result()
			if err != nil {
				return false, outcome(ctx, "SETNX", err)
			}
			if !ok {
				return false, nil
			}
			if err := l.c.PExpire(ctx, key, ttl).Err(); err != nil {
				return false, outcome(ctx, "PEXPIRE", err)
			}
			return true, nil
		}
		if l.overwriteLate && waited {
			return l.pollOrOverwrite(ctx, key, token, ttl)
		}
		ok, err := l.setNX(ctx, key, token, ttl)
		if err == nil && !ok {
			waited = true
		}
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	if l.fromReply {
		sent = l.clk.Now()
	}
	if l.cache != nil {
		l.mu.Lock()
		l.cache[key] = token
		l.mu.Unlock()
	}
	s := &lease{l: l, key: key, token: token, validUntil: sent.Add(ttl), setAt: setAt}
	if l.watchdog {
		s.stop = make(chan struct{})
		go s.watch(ttl)
	}
	return s, nil
}

// watch re-asserts the lock every third of its TTL until stopped.
func (s *lease) watch(ttl time.Duration) {
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), ttl)
			if s.l.c.Set(ctx, s.key, s.token, ttl).Err() == nil {
				s.setValidUntil(s.l.clk.Now().Add(ttl))
			}
			cancel()
		}
	}
}

// cached is CachedHold's belief that it holds key already.
func (l *locker) cached(key string) (string, bool) {
	if l.cache == nil {
		return "", false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tok, ok := l.cache[key]
	return tok, ok
}

func (l *locker) Close() error { return l.c.Close() }

func (s *lease) Key() string           { return s.key }
func (s *lease) Token() (uint64, bool) { return 0, false }
func (s *lease) ValidUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil
}

func (s *lease) setValidUntil(t time.Time) {
	s.mu.Lock()
	s.validUntil = t
	s.mu.Unlock()
}

// renewed records a renewal that went to the server.
func (s *lease) renewed(validUntil, setAt time.Time) {
	s.mu.Lock()
	s.validUntil, s.setAt = validUntil, setAt
	s.mu.Unlock()
}

func (s *lease) Lost() <-chan struct{} { return nil }

func (s *lease) Release(ctx context.Context) error {
	err := s.l.release(ctx, s)
	if s.stop != nil {
		// Only now, with the release's reply back (the planted mistake: a
		// tick while it was on its way re-asserted the lock).
		close(s.stop)
		s.stop = nil
	}
	if err == nil && s.l.cache != nil {
		// Forgotten only here: a release that found the lock gone
		// leaves "held" behind (the planted mistake).
		s.l.mu.Lock()
		delete(s.l.cache, s.key)
		s.l.mu.Unlock()
	}
	return err
}

func (s *lease) Extend(ctx context.Context, ttl time.Duration) error {
	if s.l.renewFromMemory && s.fromMemory(ttl) {
		return nil
	}
	sent, setAt := s.l.clk.Now(), time.Now()
	var n int
	var err error
	if s.l.extendUnchecked {
		var renewed bool
		renewed, err = s.l.c.PExpire(ctx, s.key, ttl).Result()
		if renewed {
			n = 1
		}
	} else {
		n, err = compareAndPExpire.Run(ctx, s.l.c, []string{s.key}, s.token, ttl.Milliseconds()).Int()
	}
	if err != nil {
		return outcome(ctx, "extend", err)
	}
	if n == 0 {
		return fmt.Errorf("extend %s: %w", s.key, impls.ErrNotHeld)
	}
	if s.l.fromReply {
		sent = s.l.clk.Now()
	}
	s.renewed(sent.Add(ttl), setAt)
	return nil
}

// setNX is the correct attempt: SET key token NX PX ttl.
func (l *locker) setNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	ok, err := l.c.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return false, outcome(ctx, "SET NX PX", err)
	}
	return ok, nil
}

// compareAndDelete is the correct release.
func (l *locker) compareAndDelete(ctx context.Context, s *lease) error {
	n, err := compareAndDelete.Run(ctx, l.c, []string{s.key}, s.token).Int()
	if err != nil {
		return outcome(ctx, "release", err)
	}
	if n == 0 {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	return nil
}

// releaseThenDel is UncheckedRelease's: the compare-and-delete under a
// deadline of its own; past it, a plain DEL of whatever the key holds.
func (l *locker) releaseThenDel(ctx context.Context, s *lease) error {
	cctx, cancel := context.WithTimeout(ctx, releaseDeadline)
	err := l.compareAndDelete(cctx, s)
	cancel()
	if !errors.Is(err, impls.ErrIndeterminate) || ctx.Err() != nil {
		return err
	}
	// The compare-and-delete timed out: the connection is in an unknown
	// state, so go-redis gives a new one, and DEL "makes sure".
	n, derr := l.c.Del(ctx, s.key).Result()
	if derr != nil {
		return outcome(ctx, "DEL", derr)
	}
	if n == 0 {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	return nil
}

// outcome says what a failed command means: refused by the server (it
// did nothing), not even connected (nothing sent), or indeterminate.
func outcome(ctx context.Context, op string, err error) error {
	var re goredis.Error
	switch {
	case errors.As(err, &re) && !errors.Is(err, goredis.Nil):
		return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
	case impls.DialFailed(err):
		return impls.DialOutcome(ctx, op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, impls.ErrIndeterminate, err)
}

package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// hashLock is the shape of Redisson's RLock: the lock is a hash of owner to
// hold count with one TTL on the whole key. An owner is one client here
// (Redisson: a client id and a thread id), so the client may take the key
// again and must release it as often. One Locker serves three approaches:
// plain (redis-reentrant: RLock.lock with a lease time, which has no
// watchdog), with a FIFO queue of waiters before the lock (redis-fair:
// RedissonFairLock, see fair.go) and with a watchdog that renews the lease
// while the client lives (redis-watchdog: RLock.lock(), see watchdog.go).
type hashLock struct {
	client *goredis.Client
	clock  clock.Clock
	owner  string // this client's field in the hash
	// fair: waiters queue before the lock (queueKeys), and acquire is the
	// queue's script (fairAcquire); else acquireHeld.
	fair    bool
	acquire *goredis.Script
	// watchdog: a goroutine renews each key this client holds every TTL/3
	// until its last hold is released or the client closes.
	watchdog bool
	// release is the release script: releaseHeld (a test swaps in
	// Redisson's release of before its unlock latch).
	release *goredis.Script

	mu    sync.Mutex
	holds map[string]*keyHold // the keys this client holds, by key
	done  chan struct{}       // closed by Close: every watchdog stops
}

// keyHold is what one client knows of one key it holds: every lease of
// the key shares it, since a re-entry, an extend or a partial release
// resets the one TTL of the whole hash.
type keyHold struct {
	leases     int           // leases granted and not yet given back
	ttl        time.Duration // the TTL last asked for: what a partial release and the watchdog reset the key to
	validUntil time.Time     // the key's expiry as this client last set it, on its clock
	stop       func()        // stops the key's watchdog and waits for it; nil without one
}

// The hash scripts. Every one works on KEYS[1], the lock's hash, with
// ARGV[2] the owner's field (as Redisson's).
var (
	// acquireHeld: take the key when nobody holds it, or once more when
	// the owner does; the TTL (ARGV[1] ms) is reset either way. It
	// returns the owner's hold count, 0 when another owner holds it.
	acquireHeld = goredis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return n
end
return 0`)
	// releaseHeld: one hold fewer (releaseCount), its answer latched.
	// KEYS[2] is the release's latch (Redisson's unlock latch): the
	// answer is kept there ARGV[3] ms, so a retry of a release whose
	// reply was lost gets the first answer instead of taking a second
	// hold away.
	releaseHeld = goredis.NewScript(`
local done = redis.call('get', KEYS[2])
if done then
  return tonumber(done)
end` + releaseCount + `
if n >= 0 then
  redis.call('set', KEYS[2], n, 'px', ARGV[3])
end
return n`)
	// extendHeld: reset the TTL to ARGV[1] ms while the owner holds the
	// key (Redisson's renewal script); 1 if it did.
	extendHeld = goredis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0`)
)

// releaseCount is the release proper: one hold fewer for the owner. With
// holds left the TTL is reset to ARGV[1] ms; with none the key is deleted.
// It leaves the holds left in n, -1 when the owner held nothing.
const releaseCount = `
local n = -1
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
  if n > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
  else
    redis.call('del', KEYS[1])
  end
end`

// latchTTL is how long a release's answer is kept for its retries: longer
// than any caller retries one release (Redisson: its retry attempts times
// their timeout, about 12 s by default).
const latchTTL = 30 * time.Second

// newHashLock builds the constructor of a hash-lock approach.
func newHashLock(name string, fair, watchdog bool) func(context.Context, impls.Env) (impls.Locker, error) {
	acquire := acquireHeld
	if fair {
		acquire = fairAcquire
	}
	return func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		c, err := firstNode(ctx, name, env)
		if err != nil {
			return nil, err
		}
		return &hashLock{client: c, clock: env.Clock, owner: impls.NewToken(), fair: fair, acquire: acquire, release: releaseHeld,
			watchdog: watchdog, holds: map[string]*keyHold{}, done: make(chan struct{})}, nil
	}
}

func (h *hashLock) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := ttlOf(opt)
	wait := waitTime(ctx, ttl)
	var sent time.Time
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		// Validity counts from before the request, as for every TTL lock.
		sent = h.clock.Now()
		n, err := h.try(ctx, key, ttl, wait, !opt.Try)
		return n > 0, err
	})
	if err != nil {
		if h.fair && !opt.Try {
			h.leaveQueue(ctx, key, wait)
		}
		return nil, err
	}
	l := &hashLease{h: h, key: key, latch: "locklab-release-latch:" + impls.NewToken()}
	h.mu.Lock()
	defer h.mu.Unlock()
	kh := h.holds[key]
	if kh == nil {
		kh = &keyHold{}
		h.holds[key] = kh
	}
	kh.leases++
	kh.ttl, kh.validUntil = ttl, sent.Add(ttl)
	if h.watchdog && kh.stop == nil {
		kh.stop = h.startWatchdog(key, kh, opt.OnRenew)
	}
	l.hold = kh
	return l, nil
}

// try makes one attempt: the holds the owner now has, 0 when another owner
// holds the key (or, fair, a waiter is ahead: then it joins the queue if
// queue is set, and stays in it).
func (h *hashLock) try(ctx context.Context, key string, ttl, wait time.Duration, queue bool) (int64, error) {
	keys := []string{key}
	args := []any{ttl.Milliseconds(), h.owner}
	if h.fair {
		q, timeouts := queueKeys(key)
		keys = append(keys, q, timeouts)
		join := 0
		if queue {
			join = 1
		}
		args = append(args, wait.Milliseconds(), h.clock.Now().UnixMilli(), join)
	}
	n, err := h.acquire.Run(ctx, h.client, keys, args...).Int64()
	if err != nil {
		return 0, classify(ctx, "acquire", err)
	}
	return n, nil
}

// Close drops the connection and stops the watchdogs, as a crash would:
// every lease is left to its TTL.
func (h *hashLock) Close() error {
	h.mu.Lock()
	select {
	case <-h.done:
	default:
		close(h.done)
	}
	h.mu.Unlock()
	return h.client.Close()
}

// forget takes one lease of kh off the client's books.
func (h *hashLock) forget(key string, kh *keyHold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kh.leases--
	if kh.leases <= 0 && h.holds[key] == kh {
		delete(h.holds, key)
	}
}

// hashLease is one grant of a hash lock. Leases of one key share its
// keyHold: their expiry is the key's.
type hashLease struct {
	h     *hashLock
	key   string
	hold  *keyHold
	latch string // this lease's release latch key
	mu    sync.Mutex
	gone  bool // released, or found not held: this lease holds nothing now
}

func (l *hashLease) Key() string           { return l.key }
func (l *hashLease) Token() (uint64, bool) { return 0, false }
func (l *hashLease) Lost() <-chan struct{} { return nil }

func (l *hashLease) ValidUntil() time.Time {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.hold.validUntil
}

// setValid records a new expiry of the key, sent at sent for ttl.
func (l *hashLease) setValid(sent time.Time, ttl time.Duration) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	l.hold.ttl, l.hold.validUntil = ttl, sent.Add(ttl)
}

// Release gives one hold back. The last hold of the key stops its
// watchdog, and waits for a renewal in flight, before anything is sent
// (the fix Redisson issue 7272 asks for): no renewal can follow the
// release, and none is sent after it began.
func (l *hashLease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	l.h.mu.Lock()
	ttl, stop := l.hold.ttl, l.hold.stop
	if l.hold.leases <= 1 {
		l.hold.stop = nil
	} else {
		stop = nil
	}
	l.h.mu.Unlock()
	if stop != nil {
		stop()
	}
	sent := l.h.clock.Now()
	n, err := l.h.release.Run(ctx, l.h.client, []string{l.key, l.latch}, ttl.Milliseconds(), l.h.owner, latchTTL.Milliseconds()).Int64()
	if err != nil {
		return classify(ctx, "release", err)
	}
	l.gone = true
	l.h.forget(l.key, l.hold)
	// The latch has done its work once an answer arrived: nothing retries
	// a release that was answered.
	_ = l.h.client.Del(ctx, l.latch).Err()
	if n < 0 {
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	if n > 0 {
		l.setValid(sent, ttl)
	}
	return nil
}

// Extend resets the key's TTL to ttl from now; the watchdog renews to it
// from then on.
func (l *hashLease) Extend(ctx context.Context, ttl time.Duration) error {
	l.mu.Lock()
	gone := l.gone
	l.mu.Unlock()
	if gone {
		return fmt.Errorf("extend %s: %w", l.key, impls.ErrNotHeld)
	}
	sent := l.h.clock.Now()
	if err := l.h.extend(ctx, l.key, ttl); err != nil {
		return err
	}
	l.setValid(sent, ttl)
	return nil
}

// extend is one renewal of key to ttl: nil if the owner still holds it.
func (h *hashLock) extend(ctx context.Context, key string, ttl time.Duration) error {
	n, err := extendHeld.Run(ctx, h.client, []string{key}, ttl.Milliseconds(), h.owner).Int()
	if err != nil {
		return classify(ctx, "extend", err)
	}
	if n == 0 {
		return fmt.Errorf("extend %s: %w", key, impls.ErrNotHeld)
	}
	return nil
}

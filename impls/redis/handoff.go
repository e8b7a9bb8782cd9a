package redis

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

// HandOffApproach waits on a message of its own: a refused waiter joins
// the key's queue in the same script that refused it, and the release
// gives the key to the first waiter still waiting (SET to its token, PX its
// TTL) and publishes to that waiter's channel alone, in one script. A grant
// under contention costs two commands, the refused attempt and the
// release, whatever the number of waiters: redis-pubsub wakes every waiter
// of the key at each release and all of them try. Each client subscribes
// once, to a channel of its own, for its life.
//
// The waiter cannot know when the key was handed to it, only that it was
// after its last refused attempt was sent; its lease counts from then, and
// a waiter that waited past half its TTL renews before it answers. A lost
// message (a dropped reply, a reset connection) is found by the waiter's
// timer, the TTL the holder had left, when its next attempt finds the key
// its own. A queued waiter that gave up leaves the queue; one that crashed
// is skipped once the wait it declared has run out, and until then a
// release may hand the key to it, to be freed by its TTL.
var HandOffApproach = impls.Approach{
	Name:     "redis-pubsub-handoff",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true, Blocking: true, Renewal: true, Fair: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock; a crashed waiter is skipped after its wait); a lost hand-off message (the waiter's timer finds the key its own)",
	Summary:  "a waiter queues in the script that refused it; the release hands the key to the first live waiter and publishes to that waiter's channel alone: two commands a grant",
	Fails:    "a holder paused past its TTL, as any TTL lock; a key handed to a waiter that crashed stays taken until its TTL",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		c, err := firstNode(ctx, "redis-pubsub-handoff", env)
		if err != nil {
			return nil, err
		}
		h := &handOffLock{client: c, clock: env.Clock, channel: "locklab:handoff:" + impls.NewToken(), waiting: map[string]chan struct{}{}}
		if err := h.listen(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		return h, nil
	},
}

// The outcomes of handOffAcquire.
const (
	handOffHeld    = 0 // held by another; the caller is queued
	handOffGranted = 1 // the key was free and is now the caller's
	handOffGiven   = 2 // a release had handed the key to the caller
)

var (
	// handOffAcquire: KEYS lock, queue (tokens in order), waiters (token
	// -> "channel|ttl ms|deadline ms" on the server's clock); ARGV token,
	// TTL ms, channel, wait ms, "1" to queue when held. Answers {outcome,
	// ms}: the TTL granted or left to the caller, or the holder's left.
	handOffAcquire = goredis.NewScript(`
local v = redis.call('get', KEYS[1])
if not v then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  if redis.call('hdel', KEYS[3], ARGV[1]) == 1 then redis.call('lrem', KEYS[2], 1, ARGV[1]) end
  return {1, tonumber(ARGV[2])}
end
if v == ARGV[1] then return {2, redis.call('pttl', KEYS[1])} end
if ARGV[5] == '1' and redis.call('hexists', KEYS[3], ARGV[1]) == 0 then
  local t = redis.call('time')
  local wait = tonumber(ARGV[4])
  redis.call('rpush', KEYS[2], ARGV[1])
  redis.call('hset', KEYS[3], ARGV[1], ARGV[3] .. '|' .. ARGV[2] .. '|' .. string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000) + wait))
  for i = 2, 3 do
    if redis.call('pttl', KEYS[i]) < wait then redis.call('pexpire', KEYS[i], wait) end
  end
end
return {0, redis.call('pttl', KEYS[1])}`)
	// handOffRelease: if the lock is still ARGV[1]'s, give it to the first
	// queued waiter whose wait has not run out and publish its token on its
	// channel (2), or delete it when nobody waits (1); 0 if not ours.
	handOffRelease = goredis.NewScript(`
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
while true do
  local nxt = redis.call('lpop', KEYS[2])
  if not nxt then break end
  local w = redis.call('hget', KEYS[3], nxt)
  redis.call('hdel', KEYS[3], nxt)
  if w then
    local ch, ttl, deadline = string.match(w, '^(.*)|(%d+)|(%d+)$')
    if tonumber(deadline) > now then
      redis.call('set', KEYS[1], nxt, 'px', ttl)
      redis.call('publish', ch, nxt)
      return 2
    end
  end
end
redis.call('del', KEYS[1])
return 1`)
	// handOffLeave: take ARGV[1] out of the queue; 1 when the lock had
	// been handed to it meanwhile (the caller then releases it).
	handOffLeave = goredis.NewScript(`
if redis.call('hdel', KEYS[3], ARGV[1]) == 1 then redis.call('lrem', KEYS[2], 1, ARGV[1]) end
if redis.call('get', KEYS[1]) == ARGV[1] then return 1 end
return 0`)
)

// handOffKeys are a lock's keys: the lock, its queue, its waiters.
func handOffKeys(key string) []string {
	return []string{key, key + ":handoff-queue", key + ":handoff-waiters"}
}

// handOffLock is one client: its command connection and its Pub/Sub
// connection, subscribed to its own channel for its life.
type handOffLock struct {
	client  *goredis.Client
	clock   clock.Clock
	channel string
	ps      *goredis.PubSub

	mu      sync.Mutex
	waiting map[string]chan struct{} // token -> its hand-off message
}

// listen subscribes to the client's channel, waits for the server's
// confirmation (no hand-off may be published before it), and passes each
// message on to the acquire that waits for it. go-redis dials a broken
// connection again and subscribes it again; a message published meanwhile
// is lost, and the waiter's timer finds the key.
func (h *handOffLock) listen(ctx context.Context) error {
	h.ps = h.client.Subscribe(ctx, h.channel)
	if _, err := h.ps.Receive(ctx); err != nil {
		_ = h.ps.Close()
		return classify(ctx, "SUBSCRIBE", err)
	}
	msgs := h.ps.Channel()
	go func() {
		for m := range msgs {
			h.mu.Lock()
			ch := h.waiting[m.Payload]
			h.mu.Unlock()
			if ch != nil {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return nil
}

func (h *handOffLock) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := ttlOf(opt)
	token := impls.NewToken()
	if opt.Try {
		sent, outcome, ms, err := h.try(ctx, key, token, ttl, 0, false)
		if err != nil {
			return nil, err
		}
		if outcome == handOffHeld {
			return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
		}
		return h.lease(key, token, sent.Add(ms)), nil
	}
	given := make(chan struct{}, 1)
	h.mu.Lock()
	h.waiting[token] = given
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.waiting, token)
		h.mu.Unlock()
	}()
	// A queued waiter's entry lasts its wait: a crashed waiter is skipped
	// after it. Without a deadline, ten TTLs (redis-fair's default).
	wait := 10 * ttl
	if d, ok := ctx.Deadline(); ok {
		wait = max(time.Until(d), time.Millisecond)
	}
	for {
		sent, outcome, ms, err := h.try(ctx, key, token, ttl, wait, true)
		if err != nil {
			return nil, err
		}
		if outcome != handOffHeld {
			return h.lease(key, token, sent.Add(ms)), nil
		}
		// The holder's TTL as the fallback when no message comes: -1, a
		// key without one, waits a TTL; -2, gone since, tries at once.
		left := ms
		switch {
		case left == -time.Millisecond:
			left = ttl
		case left < 0:
			left = time.Millisecond
		}
		timer := time.NewTimer(max(left, time.Millisecond))
		select {
		case <-given:
			timer.Stop()
			// Handed over after this attempt was sent: the lease counts
			// from then. Waited past half of it, the waiter renews first.
			l := h.lease(key, token, sent.Add(ttl))
			if time.Until(l.validUntil) > ttl/2 {
				return l, nil
			}
			err := l.Extend(ctx, ttl)
			if err == nil {
				return l, nil
			}
			if !errors.Is(err, impls.ErrNotHeld) {
				h.leave(ctx, key, token)
				return nil, err
			}
			// It ran out before the renewal: queue again.
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			h.leave(ctx, key, token)
			return nil, impls.NotAcquiredBy(ctx)
		}
	}
}

// try makes one attempt, queuing the caller when the key is held and
// queue is set. sent is when it was sent; ms the TTL granted, the TTL left
// of a key handed over, or the holder's.
func (h *handOffLock) try(ctx context.Context, key, token string, ttl, wait time.Duration, queue bool) (sent time.Time, outcome int64, ms time.Duration, err error) {
	q := "0"
	if queue {
		q = "1"
	}
	sent = h.clock.Now()
	r, err := handOffAcquire.Run(ctx, h.client, handOffKeys(key), token, ttl.Milliseconds(), h.channel, wait.Milliseconds(), q).Int64Slice()
	if err != nil {
		return sent, 0, 0, classify(ctx, "acquire", err)
	}
	if len(r) != 2 {
		return sent, 0, 0, fmt.Errorf("acquire %s: %w: answer %v", key, impls.ErrUnavailable, r)
	}
	return sent, r[0], time.Duration(r[1]) * time.Millisecond, nil
}

// leave takes a waiter that gives up out of the queue, and releases the
// key if a release had handed it over meanwhile. Its own second: ctx has
// often ended. A leave that fails leaves an entry the release skips once
// its wait has run out.
func (h *handOffLock) leave(ctx context.Context, key, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	n, err := handOffLeave.Run(ctx, h.client, handOffKeys(key), token).Int()
	if err == nil && n == 1 {
		_ = h.release(ctx, &lease{key: key, token: token})
	}
}

func (h *handOffLock) lease(key, token string, validUntil time.Time) *lease {
	return scriptLease(h.client, h.clock, key, token, validUntil, h.release)
}

// release gives the key to the first live waiter, or deletes it.
func (h *handOffLock) release(ctx context.Context, l *lease) error {
	return runRelease(ctx, h.client, handOffRelease, l, handOffKeys(l.key), l.token)
}

// Close drops both connections and leaves every lease to its TTL, as a
// crash would.
func (h *handOffLock) Close() error {
	_ = h.ps.Close()
	return h.client.Close()
}

package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// PubSubApproach waits as Redisson's RLock does: an attempt is one Lua
// script that takes a free key and answers nil, or answers the holder's
// remaining TTL; a waiter subscribes to the lock's channel, tries again,
// and then sleeps until a message comes on the channel or the remaining
// TTL runs out (its fallback when no message comes), and tries again. The
// release deletes the key and publishes on the channel in the same
// script. Every waiter of the key is woken by each release (Redisson wakes
// one per JVM; here every client is its own process) and all try at once.
// An owner is one acquire (a random token), so the lock is not reentrant.
var PubSubApproach = impls.Approach{
	Name:     "redis-pubsub",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true, Blocking: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock); a lost or late unlock message (the waiter tries again when the TTL it saw runs out)",
	Summary:  "Redisson's RLock wait: Lua acquire answers nil or the remaining TTL; the waiter subscribes to the lock's channel and sleeps until the unlock message or that TTL",
	Fails:    "a holder paused past its TTL, as any TTL lock; a lost unlock message leaves a free key idle until the waiters' timers (up to a TTL)",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		c, err := firstNode(ctx, "redis-pubsub", env)
		if err != nil {
			return nil, err
		}
		return &pubSubLock{client: c, clock: env.Clock, busy: map[*goredis.PubSub]struct{}{}}, nil
	},
}

// unlockMessage is what a release publishes (Redisson's UNLOCK_MESSAGE).
const unlockMessage = "0"

var (
	// pubSubAcquire: take the key when it is free (nil), else the
	// holder's remaining TTL in ms. KEYS[1] the lock; ARGV: token, TTL ms.
	pubSubAcquire = goredis.NewScript(`
if redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2]) then
  return nil
end
return redis.call('pttl', KEYS[1])`)
	// pubSubRelease: delete the key if it is still ours and publish the
	// unlock message on its channel (KEYS[2]); 1 if it did.
	pubSubRelease = goredis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[2])
  return 1
end
return 0`)
)

// lockChannel is the channel of key's unlock messages (Redisson:
// redisson_lock__channel:{name}).
func lockChannel(key string) string { return "redisson_lock__channel:{" + key + "}" }

// pubSubLock is one client: its command connection, and a Pub/Sub
// connection opened by its first wait and kept for the next.
type pubSubLock struct {
	client *goredis.Client
	clock  clock.Clock

	mu     sync.Mutex
	idle   *goredis.PubSub              // kept between waits
	busy   map[*goredis.PubSub]struct{} // in a wait now
	closed bool
}

func (p *pubSubLock) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := ttlOf(opt)
	token := impls.NewToken()
	sent, left, err := p.try(ctx, key, token, ttl)
	if err != nil {
		return nil, err
	}
	if left < 0 || opt.Try {
		if left >= 0 {
			return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
		}
		return p.lease(key, token, sent, ttl), nil
	}
	if sent, err = p.wait(ctx, key, token, ttl); err != nil {
		return nil, err
	}
	return p.lease(key, token, sent, ttl), nil
}

// wait subscribes to key's channel, then tries until granted: after each
// refusal it sleeps until a message comes on the channel or the TTL the
// refusal gave runs out. It answers when the granting attempt was sent.
func (p *pubSubLock) wait(ctx context.Context, key, token string, ttl time.Duration) (time.Time, error) {
	ch := lockChannel(key)
	ps, err := p.subscribe(ctx, ch)
	if err != nil {
		return time.Time{}, err
	}
	defer p.unsubscribe(ctx, ps, ch)
	for {
		sent, left, err := p.try(ctx, key, token, ttl)
		if err != nil {
			return time.Time{}, err
		}
		if left < 0 {
			return sent, nil
		}
		if err := p.sleep(ctx, ps, ch, time.Now().Add(max(left, time.Millisecond))); err != nil {
			return time.Time{}, err
		}
	}
}

// receiveSlice bounds one read of the Pub/Sub connection, so that a wait
// notices its context's end within it: a read is not interrupted by a
// cancelled context, only by its deadline.
const receiveSlice = 50 * time.Millisecond

// sleep returns when a message comes on ch or at until, whichever is
// first; NotAcquiredBy when ctx ends first. A broken connection is not an
// answer: go-redis dials it again and subscribes it again at the next
// read, and meanwhile until still bounds the wait.
func (p *pubSubLock) sleep(ctx context.Context, ps *goredis.PubSub, ch string, until time.Time) error {
	for {
		if impls.Expired(ctx) != nil {
			return impls.NotAcquiredBy(ctx)
		}
		d := min(time.Until(until), receiveSlice)
		if d <= 0 {
			return nil
		}
		m, err := ps.ReceiveTimeout(ctx, d)
		if err != nil {
			if errors.Is(err, goredis.ErrClosed) {
				return fmt.Errorf("wait on %s: %w: %w", ch, impls.ErrUnavailable, err)
			}
			if !isTimeout(err) {
				pause(ctx, d)
			}
			continue
		}
		if msg, ok := m.(*goredis.Message); ok && msg.Channel == ch {
			return nil
		}
	}
}

// pause sleeps d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// try makes one attempt. left is the holder's remaining TTL, -1 when the
// key was granted (sent is when the attempt was sent: validity counts from
// before the request).
func (p *pubSubLock) try(ctx context.Context, key, token string, ttl time.Duration) (sent time.Time, left time.Duration, err error) {
	sent = p.clock.Now()
	ms, err := pubSubAcquire.Run(ctx, p.client, []string{key}, token, ttl.Milliseconds()).Int64()
	if errors.Is(err, goredis.Nil) {
		return sent, -1, nil
	}
	if err != nil {
		return sent, 0, classify(ctx, "acquire", err)
	}
	// -1: a key without a TTL; -2: gone since the SET: try again soon.
	return sent, max(time.Duration(ms)*time.Millisecond, 0), nil
}

// subscribe subscribes a Pub/Sub connection of this client's to ch and
// waits for the server's confirmation, so that any release after it
// reaches this client. The client keeps one idle connection between waits
// (Redisson's pool of subscribe connections); a second wait at once gets
// one of its own.
func (p *pubSubLock) subscribe(ctx context.Context, ch string) (*goredis.PubSub, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("subscribe %s: %w: client closed", ch, impls.ErrUnavailable)
	}
	ps := p.idle
	p.idle = nil
	p.mu.Unlock()
	if ps == nil {
		ps = p.client.Subscribe(ctx)
	}
	p.mu.Lock()
	p.busy[ps] = struct{}{}
	p.mu.Unlock()
	if err := ps.Subscribe(ctx, ch); err != nil {
		p.drop(ps)
		return nil, classify(ctx, "SUBSCRIBE", err)
	}
	for {
		if impls.Expired(ctx) != nil {
			p.drop(ps)
			return nil, impls.NotAcquiredBy(ctx)
		}
		m, err := ps.ReceiveTimeout(ctx, receiveSlice)
		if err != nil {
			if isTimeout(err) {
				continue
			}
			p.drop(ps)
			return nil, classify(ctx, "SUBSCRIBE", err)
		}
		// Earlier waits' unsubscribe confirmations and late messages are
		// read here and dropped.
		if s, ok := m.(*goredis.Subscription); ok && s.Kind == "subscribe" && s.Channel == ch {
			return ps, nil
		}
	}
}

// unsubscribe leaves ch once the wait is over (its own second: ctx has
// often ended) and keeps the connection for the next wait; one that fails
// to leave is closed.
func (p *pubSubLock) unsubscribe(ctx context.Context, ps *goredis.PubSub, ch string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := ps.Unsubscribe(ctx, ch); err != nil {
		p.drop(ps)
		return
	}
	p.mu.Lock()
	delete(p.busy, ps)
	keep := !p.closed && p.idle == nil
	if keep {
		p.idle = ps
	}
	p.mu.Unlock()
	if !keep {
		_ = ps.Close()
	}
}

// drop closes a connection that failed a wait.
func (p *pubSubLock) drop(ps *goredis.PubSub) {
	p.mu.Lock()
	delete(p.busy, ps)
	p.mu.Unlock()
	_ = ps.Close()
}

func (p *pubSubLock) lease(key, token string, sent time.Time, ttl time.Duration) *lease {
	return scriptLease(p.client, p.clock, key, token, sent.Add(ttl), p.release)
}

// release deletes the key if it is still ours and publishes the unlock
// message, in one script.
func (p *pubSubLock) release(ctx context.Context, l *lease) error {
	return runRelease(ctx, p.client, pubSubRelease, l, []string{l.key, lockChannel(l.key)}, l.token, unlockMessage)
}

// Close drops both connections and leaves every lease to its TTL, as a
// crash would.
func (p *pubSubLock) Close() error {
	p.mu.Lock()
	p.closed = true
	open := []*goredis.PubSub{}
	if p.idle != nil {
		open = append(open, p.idle)
	}
	for ps := range p.busy {
		open = append(open, ps)
	}
	p.idle = nil
	p.mu.Unlock()
	for _, ps := range open {
		_ = ps.Close()
	}
	return p.client.Close()
}

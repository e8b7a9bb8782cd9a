// Package etcd holds the etcd lock approaches.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc/connectivity"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// Register adds every etcd approach to r.
func Register(r *impls.Registry) { r.Register(LeaseApproach) }

// DefaultTTL is the lease TTL when AcquireOptions.TTL is zero. etcd counts
// lease TTLs in whole seconds.
const DefaultTTL = 2 * time.Second

const prefix = "/locklab/etcd/"

// LeaseApproach: etcd's own concurrency.Mutex. Each acquire grants a lease
// that a keep-alive stream renews, puts a key under the lock's prefix with
// that lease, and waits until every key created before it is gone: a fair
// queue ordered by revision. The revision is a fencing token. A holder that
// crashes stops renewing and its key expires with its lease.
var LeaseApproach = impls.Approach{
	Name:            "etcd-lease",
	Server:          impls.Etcd,
	Caps:            impls.Capabilities{Fair: true, Blocking: true, Fencing: true, FaultTolerant: true, LossSignal: true},
	Safe:            true,
	CrashFreedAfter: DefaultTTL,
	Survives:        "client crashes (lease expiry), loss of an etcd minority, lost replies",
	Summary:         "concurrency.Mutex: key with a kept-alive lease under the lock prefix; lowest create revision holds",
	Fails:           "a holder paused past its lease TTL keeps working after its key expired; only the revision (fencing token) can stop its writes",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if len(env.Endpoints[impls.Etcd].Addrs) == 0 {
			return nil, fmt.Errorf("etcd-lease: no etcd endpoint")
		}
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   env.Endpoints[impls.Etcd].Addrs,
			DialTimeout: 2 * time.Second,
			Logger:      zap.NewNop(),
		})
		if err != nil {
			return nil, fmt.Errorf("etcd-lease: %w: %w", impls.ErrUnavailable, err)
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := c.Get(pctx, prefix+"probe"); err != nil {
			c.Close()
			return nil, fmt.Errorf("etcd-lease: %w: %w", impls.ErrUnavailable, err)
		}
		clk := env.Clock
		if clk == nil {
			clk = systemClock{}
		}
		return &Lease{c: c, clock: clk}, nil
	},
}

// systemClock is the real clock, for clients given none.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Lease is one client of the approach.
type Lease struct {
	c     *clientv3.Client
	clock clock.Clock // the client's lease clock
}

func lockPrefix(key string) (string, error) {
	if key == "" || len(key) > 1000 || !utf8.ValidString(key) {
		return "", fmt.Errorf("%w: etcd lock key must be 1..1000 bytes of UTF-8", impls.ErrInvalidKey)
	}
	// Escape "/" so that one lock's prefix never contains another's keys.
	return prefix + strings.NewReplacer("%", "%25", "/", "%2F").Replace(key) + "/", nil
}

// unreachable reports whether no etcd member is connected: a request that
// failed then was never sent.
func (l *Lease) unreachable() bool {
	st := l.c.ActiveConnection().GetState()
	return st == connectivity.TransientFailure || st == connectivity.Connecting || st == connectivity.Idle
}

// Acquire grants a lease and queues on the mutex.
func (l *Lease) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	pfx, err := lockPrefix(key)
	if err != nil {
		return nil, err
	}
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	sent := l.clock.Now()
	grant, err := l.c.Grant(ctx, secs)
	if err != nil {
		if l.unreachable() {
			return nil, fmt.Errorf("etcd-lease: %w: %w", impls.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("etcd-lease grant: %w: %w", impls.ErrIndeterminate, err)
	}
	// The session's keep-alive lives as long as the lease, not this call.
	sctx, stop := context.WithCancel(context.Background())
	sess, err := concurrency.NewSession(l.c, concurrency.WithLease(grant.ID), concurrency.WithContext(sctx))
	if err != nil {
		stop()
		l.revoke(grant.ID)
		return nil, fmt.Errorf("etcd-lease session: %w: %w", impls.ErrUnavailable, err)
	}
	abandon := func() {
		stop()
		l.revoke(grant.ID) // deletes our queue key with the lease
	}
	// The holder's belief: the lease lives TTL after the last keep-alive
	// the server acknowledged (the grant, to begin with), as the client
	// library itself reckons. Once the lease is gone no answer comes and
	// the belief stops moving.
	belief := &leaseBelief{}
	belief.set(sent, sent.Add(time.Duration(grant.TTL)*time.Second))
	if acks, err := l.c.KeepAlive(sctx, grant.ID); err == nil {
		go func() {
			for resp := range acks {
				if resp.TTL > 0 {
					now := l.clock.Now()
					belief.set(now, now.Add(time.Duration(resp.TTL)*time.Second))
				}
			}
		}()
	}
	m := concurrency.NewMutex(sess, pfx)
	if opt.Try {
		err = m.TryLock(ctx)
	} else {
		err = m.Lock(ctx)
	}
	switch {
	case err == nil:
		return &lease{l: l, key: key, mutex: m, sess: sess, stop: stop, id: grant.ID, rev: uint64(m.Header().Revision), belief: belief}, nil
	case errors.Is(err, concurrency.ErrLocked):
		abandon()
		return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
	case m.Key() == "\x00":
		// Lock gave up while waiting and removed its queue key.
		abandon()
		return nil, impls.NotAcquiredBy(ctx)
	default:
		// The put may or may not have landed; revoking the lease removes
		// it either way, a little later.
		abandon()
		return nil, fmt.Errorf("etcd-lease %s: %w: %w", key, impls.ErrIndeterminate, err)
	}
}

func (l *Lease) revoke(id clientv3.LeaseID) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = l.c.Revoke(ctx, id)
	}()
}

// Close drops the client as a crash would: keep-alives stop, leases expire.
func (l *Lease) Close() error { return l.c.Close() }

type lease struct {
	l        *Lease
	key      string
	mutex    *concurrency.Mutex
	sess     *concurrency.Session
	stop     context.CancelFunc
	id       clientv3.LeaseID
	rev      uint64
	belief   *leaseBelief
	mu       sync.Mutex
	released bool
}

// leaseBelief is the expiry a holder believes in, moved by keep-alives.
type leaseBelief struct {
	mu    sync.Mutex
	until time.Time
	dead  bool
}

// set moves the belief to until on an acknowledgement read at now. An
// answer read after the lease had already run out on the holder's own
// reckoning (a reply held back while it was paused or cut off) cannot
// revive it: the belief stays frozen from then on.
func (b *leaseBelief) set(now, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.dead:
	case !b.until.IsZero() && now.After(b.until):
		b.dead = true
	default:
		b.until = until
	}
}

func (b *leaseBelief) get() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.until
}

func (s *lease) Key() string           { return s.key }
func (s *lease) Token() (uint64, bool) { return s.rev, true }
func (s *lease) ValidUntil() time.Time { return s.belief.get() }
func (s *lease) Lost() <-chan struct{} { return s.sess.Done() }

func (s *lease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("etcd-lease renews its lease by keep-alive: %w", impls.ErrUnsupported)
}

// Release deletes our queue key (only ours: its name holds our lease id)
// and revokes the lease.
func (s *lease) Release(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	resp, err := s.l.c.Delete(ctx, s.mutex.Key())
	if err != nil {
		return fmt.Errorf("release %s: %w: %w", s.key, impls.ErrIndeterminate, err)
	}
	s.released = true
	s.stop()
	s.l.revoke(s.id)
	if resp.Deleted == 0 {
		return fmt.Errorf("release %s: %w: the lease had expired", s.key, impls.ErrNotHeld)
	}
	return nil
}

package redis

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/tcpproxy"
)

// A renewal that gets no answer is tried again within the lease: one lost
// renewal must not cost a live holder its lock. The holder's requests are
// dropped from just after its first renewal for three quarters of a TTL,
// so its second renewal (a third of a TTL later) is cut off at its
// deadline two thirds of a TTL after the first; another third would reach
// the server only as the key expires, a tenth (after the drop) with a
// sixth of the lease to spare.
func TestWatchdogRetriesALostRenewal(t *testing.T) {
	const ttl = 3 * time.Second
	ctx := context.Background()
	holder, other := newLocker(t, WatchdogApproach, 1), newLocker(t, WatchdogApproach, 2)
	proxy := testCluster.NodesOf(impls.Redis)[0].Proxy()
	var log renewalLog
	first := make(chan struct{})
	lease, err := holder.Acquire(ctx, "watchdog-lost-renewal", impls.AcquireOptions{TTL: ttl, OnRenew: func(r impls.Renewal) {
		if log.add(r) == 1 && r.Done {
			close(first)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	<-first
	drop, err := proxy.Add(tcpproxy.Toxic{Kind: tcpproxy.Drop, Direction: tcpproxy.Upstream})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl / 4)
	if err := drop.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	// Past the lease the first renewal bought, by a third of a TTL.
	time.Sleep(ttl/4 + ttl/3)
	if _, err := other.Acquire(ctx, "watchdog-lost-renewal", impls.AcquireOptions{TTL: ttl, Try: true}); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("a live holder's lock after one lost renewal: another client's try: err = %v, want not acquired (renewals: %v)", err, log.errs())
	}
	if errs := log.errs(); len(errs) == 0 {
		t.Fatalf("no renewal failed while the holder's requests were dropped: the test did not test")
	}
}

// renewalLog counts the renewals reported done and keeps their errors.
type renewalLog struct {
	mu   sync.Mutex
	done int
	err  []error
}

func (l *renewalLog) add(r impls.Renewal) (done int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Done {
		l.done++
		if r.Err != nil {
			l.err = append(l.err, r.Err)
		}
	}
	return l.done
}

func (l *renewalLog) errs() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.err...)
}

// The suite's watchdog tests must fail a lock that declares a watchdog and
// has none, and one whose watchdog outlives the release (Redisson issue
// 7272). Both mutants live in this test only.
func TestWatchdogTestsFailBrokenWatchdogs(t *testing.T) {
	none := ReentrantApproach
	none.Name, none.Caps.Watchdog = "redis-reentrant-claims-watchdog", true
	leaky := WatchdogApproach
	leaky.Name = "redis-watchdog-leaky"
	leaky.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		l, err := WatchdogApproach.New(ctx, env)
		return &leakyWatchdog{Locker: l}, err
	}
	for _, tt := range []struct {
		a    impls.Approach
		test string
	}{
		{none, "/WatchdogKeepsTheLock"},
		{leaky, "/WatchdogStopsAtRelease"},
	} {
		t.Run(tt.a.Name, func(t *testing.T) { conformance.RequireFailure(t, testCluster, tt.a, tt.test) })
	}
}

// leakyWatchdog adds to each lease a second renewer that nothing stops: the
// shape of Redisson issue 7272, where a renewal scheduled after the unlock
// went on renewing.
type leakyWatchdog struct{ impls.Locker }

func (l *leakyWatchdog) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	lease, err := l.Locker.Acquire(ctx, key, opt)
	if err != nil || opt.OnRenew == nil {
		return lease, err
	}
	go func() { // nothing stops it but its ten renewals
		for range 10 {
			time.Sleep(ttlOf(opt) / 3)
			opt.OnRenew(impls.Renewal{})
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := lease.Extend(rctx, ttlOf(opt))
			cancel()
			opt.OnRenew(impls.Renewal{Done: true, Err: err, ValidUntil: lease.ValidUntil()})
		}
	}()
	return lease, nil
}

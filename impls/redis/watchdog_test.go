package redis

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
)

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

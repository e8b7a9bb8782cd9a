package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// missedWake is a client of a lock whose waiter misses its notification:
// it checks the key once and, finding it held, waits for a fallback timer
// before it looks again.
type missedWake struct {
	impls.Locker
	fallback time.Duration
}

func (l missedWake) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	for {
		lease, err := l.Locker.Acquire(ctx, key, impls.AcquireOptions{TTL: opt.TTL, Try: true})
		if !errors.Is(err, impls.ErrNotAcquired) || opt.Try {
			return lease, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(impls.ErrNotAcquired, ctx.Err())
		case <-time.After(l.fallback):
		}
	}
}

// BlockingHandOff's bound grows with what the run measured, never with a
// waiter's own timer: a waiter that wakes with the release passes, one that
// waits out a 1 s fallback fails.
func TestBlockingHandOffTellsAMissedWake(t *testing.T) {
	for _, tt := range []struct {
		name     string
		fallback time.Duration // 0: the in-memory lock as it is (it polls within 8 ms)
		pass     bool
	}{
		{"woken promptly", 0, true},
		{"a 1 s fallback timer", time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := memlock.NewService(1).Approach("mem")
			if tt.fallback > 0 {
				inner := a.New
				a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
					l, err := inner(ctx, env)
					return missedWake{l, tt.fallback}, err
				}
			}
			s := &suite{h: Harness{Approach: a}, prefix: "handoff-"}
			var sa Standalone
			res, err := sa.Run(context.Background(), "BlockingHandOff", s.blockingHandOff)
			if err != nil {
				t.Fatal(err)
			}
			top := res[len(res)-1]
			if passed := top.Status == Passed; passed != tt.pass {
				t.Fatalf("passed %v, want %v: %s", passed, tt.pass, strings.Join(top.Output, "; "))
			}
		})
	}
}

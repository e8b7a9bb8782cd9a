package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// refusingLocker refuses every fifth acquire before taking the lock, as a
// waiter whose ZooKeeper session expired is refused.
type refusingLocker struct {
	impls.Locker
	n *atomic.Int64
}

func (l refusingLocker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if l.n.Add(1)%5 == 0 {
		return nil, fmt.Errorf("%w: %w: %s: our queue node vanished", impls.ErrNotAcquired, impls.ErrSessionLost, key)
	}
	return l.Locker.Acquire(ctx, key, opt)
}

// A waiter refused before its deadline loses its cycle, not the test: the
// lock held nothing for it.
func TestMutualExclusionTakesARefusedWaiter(t *testing.T) {
	a := memlock.NewService(1).Approach("mem")
	inner, n := a.New, &atomic.Int64{}
	a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		l, err := inner(ctx, env)
		return refusingLocker{l, n}, err
	}
	s := &suite{h: Harness{Approach: a, Contenders: 4}, prefix: "refused-"}
	wantStatus(t, "MutualExclusion", s.mutualExclusion, Passed)
}

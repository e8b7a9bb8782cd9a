package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// cutOffLocker's first release answers indeterminate without releasing, as
// a ZooKeeper client whose connection closed under the call does.
type cutOffLocker struct {
	impls.Locker
	cut *atomic.Bool // set: the next release is cut off
}

func (l cutOffLocker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	lease, err := l.Locker.Acquire(ctx, key, opt)
	if err != nil {
		return nil, err
	}
	return cutOffLease{lease, l.cut}, nil
}

type cutOffLease struct {
	impls.Lease
	cut *atomic.Bool
}

func (l cutOffLease) Release(ctx context.Context) error {
	if l.cut.CompareAndSwap(true, false) {
		return fmt.Errorf("release %s: %w: connection closed", l.Key(), impls.ErrIndeterminate)
	}
	return l.Lease.Release(ctx)
}

// A hand-off whose release was cut off (its answer lost, the lock still
// held) times nothing: it is settled and done again, and the five
// hand-offs that follow are what BlockingHandOff judges.
func TestBlockingHandOffRedoesACutOffRelease(t *testing.T) {
	a := memlock.NewService(1).Approach("mem")
	a.Caps.Blocking = true
	cut := &atomic.Bool{}
	cut.Store(true)
	inner := a.New
	a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		l, err := inner(ctx, env)
		if env.ClientID != 1 { // a, the hand-off's first holder
			return l, err
		}
		return cutOffLocker{l, cut}, err
	}
	s := &suite{h: Harness{Approach: a}, prefix: "handoff-"}
	wantStatus(t, "BlockingHandOff", s.blockingHandOff, Passed)
	if cut.Load() {
		t.Fatal("no release was cut off: the test tested nothing")
	}
}

// A client that could not reach its servers when it was made, or whose
// set-up call went unanswered, is made again (a starved container), five
// times at most; one that never can, or that failed otherwise, fails the
// test that needs it.
func TestNewClientAgainWhenTheServersWereUnreachable(t *testing.T) {
	for _, tt := range []struct {
		name     string
		failures int32
		err      error
		want     Status
	}{
		{"unreachable once", 1, impls.ErrUnavailable, Passed},
		{"unreachable four times", 4, impls.ErrUnavailable, Passed},
		{"unreachable every time", 5, impls.ErrUnavailable, Failed},
		{"a set-up call unanswered once", 1, impls.ErrIndeterminate, Passed},
		{"a set-up call unanswered every time", 5, impls.ErrIndeterminate, Failed},
		{"refused for another reason", 1, impls.ErrInvalidKey, Failed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := failingFirst(tt.failures, tt.err, func(id int) bool { return id == 1 })
			s := &suite{h: Harness{Approach: a}, prefix: "new-", firstPause: time.Millisecond}
			wantStatus(t, "ReentryRefused", s.reentryRefused, tt.want)
		})
	}
}

// pollingLocker's waiter tries the key every 650 ms (a release 300 ms into the wait
// reaches it 350 ms late), as a lock that polls
// does while it declares itself blocking.
type pollingLocker struct{ impls.Locker }

func (l pollingLocker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	for {
		lease, err := l.Locker.Acquire(ctx, key, impls.AcquireOptions{TTL: opt.TTL, Try: true})
		if opt.Try || !errors.Is(err, impls.ErrNotAcquired) {
			return lease, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", impls.ErrNotAcquired, ctx.Err())
		case <-time.After(650 * time.Millisecond):
		}
	}
}

// A waiter that polls is slow in every round of hand-offs: the rounds made
// again for a loaded machine do not let it pass.
func TestBlockingHandOffFailsAPollingWaiter(t *testing.T) {
	a := memlock.NewService(1).Approach("mem")
	a.Caps.Blocking = true
	inner := a.New
	a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		l, err := inner(ctx, env)
		return pollingLocker{l}, err
	}
	s := &suite{h: Harness{Approach: a}, prefix: "handoff-"}
	wantStatus(t, "BlockingHandOff", s.blockingHandOff, Failed)
}

// A contender's replacement is made again, as any new client is, when the
// servers could not be reached; a failure of another kind retires it at once.
func TestReplacementMadeAgainWhenTheServersWereUnreachable(t *testing.T) {
	for _, tt := range []struct {
		name     string
		failures int32
		err      error
		want     bool
	}{
		{"unreachable once", 1, impls.ErrUnavailable, true},
		{"unreachable four times", 4, impls.ErrUnavailable, true},
		{"unreachable every time", 5, impls.ErrUnavailable, false},
		{"refused for another reason", 1, impls.ErrInvalidKey, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := failingFirst(tt.failures, tt.err, func(id int) bool { return id >= 16 })
			s := &suite{h: Harness{Approach: a}, prefix: "replace-", firstPause: time.Millisecond}
			old, err := a.New(context.Background(), impls.Env{ClientID: 1})
			if err != nil {
				t.Fatal(err)
			}
			var next atomic.Int64
			next.Store(16)
			l, id, err := s.replacement(testingT{t}, &next, old)
			if got := err == nil; got != tt.want {
				t.Fatalf("replaced = %v (%v), want %v", got, err, tt.want)
			}
			if err != nil {
				return
			}
			defer l.Close()
			if id != 16 {
				t.Errorf("replacement's process id %d, want 16", id)
			}
		})
	}
}

// failingFirst is an in-memory approach whose New fails with err the first
// failures times it is asked for a client whose id matches.
func failingFirst(failures int32, err error, matches func(id int) bool) impls.Approach {
	a := memlock.NewService(1).Approach("mem")
	var failed atomic.Int32
	inner := a.New
	a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if matches(env.ClientID) && failed.Add(1) <= failures {
			return nil, fmt.Errorf("mem: %w: no session", err)
		}
		return inner(ctx, env)
	}
	return a
}

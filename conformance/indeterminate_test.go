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

// droppedReplies is a Fault that sets a flag the clients below read.
type droppedReplies struct{ on *atomic.Bool }

func (f droppedReplies) Inject(context.Context) error { f.on.Store(true); return nil }
func (f droppedReplies) Heal(context.Context) error   { f.on.Store(false); return nil }

// answer is what a client of the in-memory lock does with its acquire
// while replies are dropped.
type answer int

const (
	firstReplyLost answer = iota // an acquire of two commands: nothing taken, "indeterminate"
	tookIt                       // the lock taken, "indeterminate"
	tookItSaysNo                 // the lock taken, "not acquired": a lie
)

type droppingLocker struct {
	impls.Locker
	dropping *atomic.Bool
	does     answer
}

func (l droppingLocker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if !l.dropping.Load() {
		return l.Locker.Acquire(ctx, key, opt)
	}
	if l.does == firstReplyLost {
		return nil, fmt.Errorf("acquire %s: first reply lost: %w", key, impls.ErrIndeterminate)
	}
	if _, err := l.Locker.Acquire(ctx, key, opt); err != nil {
		return nil, err
	}
	if l.does == tookItSaysNo {
		return nil, fmt.Errorf("acquire %s: %w", key, impls.ErrNotAcquired)
	}
	return nil, fmt.Errorf("acquire %s: reply lost: %w", key, impls.ErrIndeterminate)
}

func TestTimeoutIsIndeterminate(t *testing.T) {
	tests := []struct {
		name string
		does answer
		want Status
	}{
		{"an acquire of two commands whose first reply was lost", firstReplyLost, Passed},
		{"a single command that took the lock", tookIt, Passed},
		{"not acquired, though it took the lock", tookItSaysNo, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dropping := &atomic.Bool{}
			a := memlock.NewService(1).Approach("mem")
			inner := a.New
			a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
				l, err := inner(ctx, env)
				return droppingLocker{l, dropping, tt.does}, err
			}
			s := &suite{h: Harness{Approach: a, DropReplies: droppedReplies{dropping}}, prefix: "drop-"}
			wantStatus(t, "TimeoutIsIndeterminate", s.timeoutIsIndeterminate, tt.want)
		})
	}
}

// waitingTry is a client whose try on a held key waits a lock-wait
// timeout of its own before it is refused (GET_LOCK with a timeout).
type waitingTry struct {
	impls.Locker
	wait time.Duration
}

func (l waitingTry) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	lease, err := l.Locker.Acquire(ctx, key, opt)
	if opt.Try && errors.Is(err, impls.ErrNotAcquired) {
		time.Sleep(l.wait)
	}
	return lease, err
}

// A try refused at once passes; one that waits 1.5 s before it is refused
// fails, though its server answers at once.
func TestTryDoesNotWait(t *testing.T) {
	for _, tt := range []struct {
		name string
		wait time.Duration
		want Status
	}{
		{"refused at once", 0, Passed},
		{"refused after a wait of its own", 1500 * time.Millisecond, Failed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := memlock.NewService(1).Approach("mem")
			inner := a.New
			a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
				l, err := inner(ctx, env)
				return waitingTry{l, tt.wait}, err
			}
			s := &suite{h: Harness{Approach: a}, prefix: "try-"}
			wantStatus(t, "TryDoesNotWait", s.tryDoesNotWait, tt.want)
		})
	}
}

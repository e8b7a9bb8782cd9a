package conformance

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// requestTokens draws a lease's token when the request arrives, not at
// the grant: a waiter that asked before another grant ends up with the
// smaller token.
type requestTokens struct {
	impls.Locker
	next *atomic.Uint64
}

func (l requestTokens) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	tok := l.next.Add(1)
	lease, err := l.Locker.Acquire(ctx, key, opt)
	if err != nil {
		return nil, err
	}
	return tokenLease{lease, tok}, nil
}

type tokenLease struct {
	impls.Lease
	tok uint64
}

func (l tokenLease) Token() (uint64, bool) { return l.tok, true }

func TestFencingTokensIncrease(t *testing.T) {
	tests := []struct {
		name     string
		atAsking bool
		want     Status
	}{
		{"tokens drawn at the grant", false, Passed},
		{"tokens drawn when asked", true, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The waiter polls (every 650 ms), so the holder's own try right
			// after its release is granted ahead of it every time: with
			// memlock's own wake-up the waiter won that race now and then
			// (0 of 3 grants across its wait, and the bad tokens passed).
			a := memlock.NewService(1).Approach("mem")
			inner, next := a.New, &atomic.Uint64{}
			a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
				l, err := inner(ctx, env)
				if tt.atAsking {
					return requestTokens{pollingLocker{l}, next}, err
				}
				return pollingLocker{l}, err
			}
			s := &suite{h: Harness{Approach: a}, prefix: "fence-"}
			wantStatus(t, "FencingTokensIncrease", s.fencingTokensIncrease, tt.want)
		})
	}
}

// wantStatus runs one of the suite's tests, as locklab conform does, and
// fails t unless it ends with want.
func wantStatus(t *testing.T, name string, f func(T), want Status) {
	t.Helper()
	results, err := (&Standalone{}).Run(context.Background(), "mem", func(t T) { t.Run(name, f) })
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	t.Logf("%s: %s", r.Status, strings.Join(r.Output, "; "))
	if r.Status != want {
		t.Fatalf("%s: %s, want %s", r.Name, r.Status, want)
	}
}

// refusingFirst answers its first n acquires with err, taking nothing.
type refusingFirst struct {
	impls.Locker
	n   *atomic.Int32
	err error
}

func (l refusingFirst) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if l.n.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Locker.Acquire(ctx, key, opt)
}

// The holder's acquire answered "unavailable" (nothing taken) is asked
// again; answered so every time (for longer than unavailableFor), or
// indeterminate, it ends the test.
func TestFencingHolderAskedAgainWhenNotConnected(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int32
		err  error
		want Status
	}{
		{"unavailable once", 1, impls.ErrUnavailable, Passed},
		{"unavailable every time", math.MaxInt32, impls.ErrUnavailable, Failed},
		{"indeterminate once", 1, impls.ErrIndeterminate, Failed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // asked again for unavailableFor
			a := memlock.NewService(1).Approach("mem")
			inner := a.New
			a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
				l, err := inner(ctx, env)
				if env.ClientID != 1 {
					return pollingLocker{l}, err
				}
				n := &atomic.Int32{}
				n.Store(tt.n)
				return refusingFirst{pollingLocker{l}, n, fmt.Errorf("mem: %w: not connected", tt.err)}, err
			}
			s := &suite{h: Harness{Approach: a}, prefix: "fence-again-"}
			wantStatus(t, "FencingTokensIncrease", s.fencingTokensIncrease, tt.want)
		})
	}
}

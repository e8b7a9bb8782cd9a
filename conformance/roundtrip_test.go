package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// A try that never reached the server (unavailable) times nothing: the
// pace's round trip asks again; unavailable every time, it ends the test.
func TestRoundTripAskedAgainWhenUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int32
		want Status
	}{
		{"unavailable once", 1, Passed},
		{"unavailable twice", 2, Passed},
		{"unavailable every time", 3, Failed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := memlock.NewService(1).Approach("mem")
			ctx := context.Background()
			holder, err := a.New(ctx, impls.Env{ClientID: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			if _, err := holder.Acquire(ctx, "k", impls.AcquireOptions{}); err != nil {
				t.Fatal(err)
			}
			l, err := a.New(ctx, impls.Env{ClientID: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			n := &atomic.Int32{}
			n.Store(tt.n)
			prober := refusingFirst{l, n, fmt.Errorf("mem: %w: connection timeout", impls.ErrUnavailable)}
			wantStatus(t, "RoundTrip", func(t T) { roundTrip(t, prober, "k") }, tt.want)
		})
	}
}

package workload

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// stoppedClock never moves: to a holder reading it, a lease never runs out.
type stoppedClock struct{ at time.Time }

func (c stoppedClock) Now() time.Time { return c.at }

// A holder that honours its lease stops when the lease runs out by its own
// clock; one whose clock stands still (a clock fault) works its full hold,
// as a holder that ignores its lease does. One client, 300 ms holds on a
// 50 ms lease, for 1 s: about 3 cycles when the full hold is worked, about
// 30 when each stops before its lease runs out (20 ms ahead of it).
func TestHonourLeaseStopsAtTheHoldersOwnExpiry(t *testing.T) {
	hold := Dist{Kind: "fixed", A: 300 * time.Millisecond}
	for _, tc := range []struct {
		name           string
		honour         bool
		own            clock.Clock
		minAcq, maxAcq int64
	}{
		{"works its hold", false, &clock.Skewable{}, 1, 4},
		{"stops before its lease runs out", true, &clock.Skewable{}, 12, 60},
		{"stopped clock: lease never ends for it", true, stoppedClock{time.Now()}, 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := memlock.NewService(1).Approach("mem")
			l, err := a.New(context.Background(), impls.Env{ClientID: 0, Clock: tc.own})
			if err != nil {
				t.Fatal(err)
			}
			spec := Spec{Clients: 1, Keys: 1, Hold: hold, TTL: 50 * time.Millisecond, Duration: time.Second, Seed: 1,
				HonourLease: tc.honour}
			st, err := Run(context.Background(), spec, []Client{{Locker: l, Clock: tc.own}}, nil, history.Discard{}, monotonic{time.Now()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Acquired < tc.minAcq || st.Acquired > tc.maxAcq {
				t.Fatalf("acquired %d times in 1 s, want %d to %d", st.Acquired, tc.minAcq, tc.maxAcq)
			}
		})
	}
}

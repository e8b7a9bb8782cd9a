package workload

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

type monotonic struct{ start time.Time }

func (m monotonic) Nanos() int64 { return int64(time.Since(m.start)) }

func runMemory(t *testing.T, spec Spec) Stats {
	t.Helper()
	a := memlock.NewService(1).Approach("mem")
	clients := make([]Client, spec.Clients)
	for i := range clients {
		l, err := a.New(context.Background(), impls.Env{ClientID: i})
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = Client{Locker: l}
	}
	st, err := Run(context.Background(), spec, clients, nil, history.Discard{}, monotonic{time.Now()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// An open loop issues requests at the rate asked, not as fast as the lock
// answers.
func TestOpenLoopKeepsItsRate(t *testing.T) {
	st := runMemory(t, Spec{Clients: 4, Keys: 4, Duration: time.Second, Rate: 200, Seed: 1})
	// 200 due in the second; a few at its edges may fall either side.
	if st.Acquired < 180 || st.Acquired > 210 {
		t.Fatalf("acquired %d at 200/s for 1 s, want about 200", st.Acquired)
	}
	if st.Late > st.Acquired/2 {
		t.Fatalf("%d of %d requests late on an idle lock", st.Late, st.Acquired)
	}
}

// Coordinated omission: one key held 20 ms serves at most 50/s; at 100/s
// requests queue, and their latency counts from when each was due, so it
// grows with the queue far past the hold. A closed loop of the same clients
// reports only the wait behind the current holders.
func TestOpenLoopCountsFromWhenRequestsWereDue(t *testing.T) {
	hold := Dist{Kind: "fixed", A: 20 * time.Millisecond}
	open := runMemory(t, Spec{Clients: 4, Keys: 1, Hold: hold, Duration: time.Second, Rate: 100, Seed: 1})
	closed := runMemory(t, Spec{Clients: 4, Keys: 1, Hold: hold, Duration: time.Second, Seed: 1})
	// The about 50 requests served in the second were due in its first
	// half, behind a backlog growing to a quarter second: a median of about
	// 0.1 s. In the closed loop a median request is granted almost at once
	// (the in-memory lock lets the last holder take it again).
	openP50, closedP50 := time.Duration(open.Acquire.ValueAtQuantile(50)), time.Duration(closed.Acquire.ValueAtQuantile(50))
	if open.Late == 0 || openP50 < 50*time.Millisecond || openP50 < 2*closedP50 {
		t.Fatalf("open loop: %d late, p50 %v; closed loop p50 %v: want the open loop's queue to show", open.Late, openP50, closedP50)
	}
}

func TestRateValidated(t *testing.T) {
	for _, r := range []float64{-1, 1e300} {
		s := Spec{Clients: 1, Keys: 1, Duration: time.Second, Rate: r}
		if err := s.Validate(); err == nil {
			t.Errorf("rate %v accepted", r)
		}
	}
}

package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// quorumMember is a server that is healthy again only once a quorum of
// its ensemble has been restarted: its Restart waits for that, as a
// ZooKeeper member's health check does.
type quorumMember struct {
	fakeProc
	ensemble *ensemble
}

type ensemble struct {
	mu        sync.Mutex
	restarted int
	quorum    int
	back      chan struct{}
}

func (m *quorumMember) Restart(ctx context.Context) error {
	e := m.ensemble
	e.mu.Lock()
	e.restarted++
	if e.restarted == e.quorum {
		close(e.back)
	}
	e.mu.Unlock()
	select {
	case <-e.back:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("not healthy in time: %w", ctx.Err())
	}
}

// Isolate and Rejoin: a member cut off and let back in is healthy once a
// quorum is back, as after a restart.
func (m *quorumMember) CanIsolate() error                { return nil }
func (m *quorumMember) Isolate() error                   { return nil }
func (m *quorumMember) Rejoin(ctx context.Context) error { return m.Restart(ctx) }

func TestWholeEnsembleHealsSideBySide(t *testing.T) {
	for _, f := range []Fault{ServerKill{}, ServerIsolate{}} {
		t.Run(f.Kind(), func(t *testing.T) {
			e := &ensemble{quorum: 2, back: make(chan struct{})}
			var targets []Target
			for i := range 3 {
				targets = append(targets, Target{Kind: TargetNode, Name: fmt.Sprintf("zk-%d", i+1), Process: &quorumMember{ensemble: e}})
			}
			h, err := InjectAll(context.Background(), f, targets)
			if err != nil {
				t.Fatal(err)
			}
			// One after another, the first member's heal would wait here
			// for a quorum that is never restarted.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h(ctx); err != nil {
				t.Fatalf("heal: %v", err)
			}
		})
	}
}

package pg

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
)

// A waiter's lock_timeout can fire in the instant the server grants it the
// lock: PostgreSQL then records the grant and still raises 55P03, and a
// session-level advisory lock outlives the error. A client that believes
// the error holds the lock without knowing it, re-acquires it on its next
// chunk (reentrantly, once more), releases once, and keeps it for ever:
// every other waiter starves. With 1 ms chunks the race is hit in most
// runs; the lock must be free at the end and every contender done.
func TestLockTimeoutRaceLeavesNoHiddenGrant(t *testing.T) {
	dsn := testCluster.DirectEndpoints().DSN(impls.Postgres)
	const contenders, cycles = 8, 150
	key := "timeout-race-" + impls.NewToken()
	ctx := context.Background()
	newClient := func(chunk time.Duration) *Advisory {
		l := &Advisory{dsn: dsn, chunk: chunk}
		if err := l.connect(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for range contenders {
		l := newClient(time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				lease, err := l.Acquire(actx, key, impls.AcquireOptions{})
				cancel()
				if err != nil {
					errs <- err
					return
				}
				if err := lease.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("contender: %v", err)
	}
	lease, err := newClient(waitChunk).Acquire(ctx, key, impls.AcquireOptions{Try: true})
	if err != nil {
		t.Fatalf("after every contender released, the lock is still held: %v", err)
	}
	if err := lease.Release(ctx); err != nil && !errors.Is(err, impls.ErrNotHeld) {
		t.Fatal(err)
	}
}

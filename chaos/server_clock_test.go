package chaos

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// server-clock on a Redis node under libfaketime: a lock key whose TTL the
// jump passes is gone at once; the heal takes the jump back; a node not
// under libfaketime is refused before anything happens, saying why.
func TestServerClockJumpExpiresRedisLock(t *testing.T) {
	ctx := context.Background()
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}, FakeTime: true})
	n := c.Nodes()[0]
	rc := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
	defer rc.Close()
	key := randomKey("lock")
	if ok, err := rc.SetNX(ctx, key, "holder", 5*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX: %v %v", ok, err)
	}
	f := &ServerClock{Offset: Duration(6 * time.Second)}
	tgt := NodeTarget(n)
	if err := f.Available(tgt); err != nil {
		t.Fatal(err)
	}
	h := inject(t, f, tgt)
	if n, err := rc.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("after a jump past the TTL the lock key still exists (%d, %v)", n, err)
	}
	// The lock is free: another client is granted it while the first
	// holder's 5 s lease has not run out on its own clock.
	if ok, err := rc.SetNX(ctx, key, "second", 5*time.Second).Result(); err != nil || !ok {
		t.Fatalf("second SET NX: %v %v", ok, err)
	}
	heal(t, h)
	if d, err := n.ClockOffset(); err != nil || d != 0 {
		t.Fatalf("offset after heal = %v, %v; want 0", d, err)
	}

	plain := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	err := f.Available(NodeTarget(plain.Nodes()[0]))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "libfaketime") {
		t.Fatalf("Available on a node without libfaketime: %v", err)
	}
}

// Jumps on one node that start and heal at the same moments (two steps due
// at one time fire side by side) all count, and their heals leave the
// server's clock exactly where it was, to the nanosecond: the offset is
// written exactly, and each jump or heal is one step on the node.
func TestServerClockJumpsAtOnceLeaveNoRemainder(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}, FakeTime: true})
	n := c.Nodes()[0]
	tgt := NodeTarget(n)
	offsets := []time.Duration{587500 * time.Microsecond, -1234567891, 2 * time.Second, 1000500 * time.Microsecond, -3 * time.Second, 7, 40 * time.Millisecond, 999999 * time.Microsecond}
	var want time.Duration
	for _, d := range offsets {
		want += d
	}
	for round := range 5 {
		heals, errs := make([]Heal, len(offsets)), make([]error, len(offsets))
		var wg sync.WaitGroup
		at := make(chan struct{})
		for i, d := range offsets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-at
				heals[i], errs[i] = InjectAll(context.Background(), &ServerClock{Offset: Duration(d)}, []Target{tgt})
			}()
		}
		close(at)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if d, err := n.ClockOffset(); err != nil || d != want {
			t.Fatalf("round %d: with every jump in place the offset is %v (%v), want %v", round, d, err, want)
		}
		at = make(chan struct{})
		for i, h := range heals {
			wg.Add(1)
			go func() { defer wg.Done(); <-at; errs[i] = h(context.Background()) }()
		}
		close(at)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if d, err := n.ClockOffset(); err != nil || d != 0 {
			t.Fatalf("round %d: after every heal the offset is %v (%v), want 0", round, d, err)
		}
	}
}

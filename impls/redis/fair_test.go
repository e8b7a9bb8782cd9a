package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
)

// The suite's fair-order test must fail a lock that declares "fair" and is
// not: here redis-fair with its queue pushed at the wrong end (LIFO: the
// newest waiter is served first), a mutant that lives in this test only.
// Without this, a FairGrantOrder that passed everything would go unseen.
func TestFairGrantOrderFailsAnUnfairQueue(t *testing.T) {
	lifoSrc := strings.Replace(fairAcquireSrc, "redis.call('rpush', KEYS[2], ARGV[2])", "redis.call('lpush', KEYS[2], ARGV[2])", 1)
	if lifoSrc == fairAcquireSrc {
		t.Fatal("the queue's push is not where the mutation expects it")
	}
	lifo := conformance.Mutant(FairApproach, "redis-fair-lifo", func(l impls.Locker) { l.(*hashLock).acquire = goredis.NewScript(lifoSrc) })
	conformance.RequireFailure(t, testCluster, lifo, "/FairGrantOrder")
}

// A waiter that crashed at the head of the queue (it never leaves it) is
// measured here: nobody behind it is granted the lock until its turn times
// out, and its turn was set when it joined: the holder's expiry as it stood
// then, plus the waiter's wait time. The holder releasing early does not
// help. docs/approaches.md states the figure.
func TestFairDeadWaiterAtTheHead(t *testing.T) {
	const (
		ttl  = 3 * time.Second // the holder's
		wait = 2 * time.Second // the dead waiter's deadline
	)
	key := "fair-dead-waiter"
	direct := newClientNoPing(testCluster.DirectEndpoints()[impls.Redis].Addrs[0])
	defer direct.Close()
	queue, _ := queueKeys(key)
	queued := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			got, err := direct.LLen(context.Background(), queue).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiters in the queue, want %d", got, n)
			}
		}
	}
	holder, dead, live := newLocker(t, FairApproach, 1), newLocker(t, FairApproach, 2), newLocker(t, FairApproach, 3)
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	held := mustAcquire(t, holder, key, impls.AcquireOptions{TTL: ttl})
	deadGone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := dead.Acquire(ctx, key, impls.AcquireOptions{TTL: ttl})
		deadGone <- err
	}()
	queued(1)
	dead.Close() // a crash: it leaves its place in the queue behind
	t.Logf("the dead waiter's acquire ended: %v", <-deadGone)
	type grant struct {
		at    time.Time
		lease impls.Lease
		err   error
	}
	granted := make(chan grant, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		lease, err := live.Acquire(ctx, key, impls.AcquireOptions{TTL: ttl})
		granted <- grant{time.Now(), lease, err}
	}()
	queued(2)
	mustRelease(t, held)
	released := time.Since(start)
	g := <-granted
	if g.err != nil {
		t.Fatalf("the live waiter behind the dead one: %v", g.err)
	}
	mustRelease(t, g.lease)
	took := g.at.Sub(start)
	t.Logf("holder released %v after its grant; the waiter behind the dead one was granted %v after it (holder's TTL %v + dead waiter's wait %v)",
		released.Round(time.Millisecond), took.Round(time.Millisecond), ttl, wait)
	if want := ttl + wait; took < want-300*time.Millisecond || took > want+time.Second+stalls.Within(start, g.at) {
		t.Errorf("granted %v after the holder's grant, want about its TTL + the dead waiter's wait = %v", took, want)
	}
}

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
)

// The suite's fair-order test must fail a lock that declares "fair" and is
// not: here mysql-queue-fair with its queue read backwards (LIFO: the
// newest place is the head), a mutant that lives in this test only.
func TestQueueFairGrantOrderFailsALIFOQueue(t *testing.T) {
	lifoHead := strings.Replace(queueHeadQuery, "ORDER BY id", "ORDER BY id DESC", 1)
	if lifoHead == queueHeadQuery {
		t.Fatal("the head query's order is not where the mutation expects it")
	}
	lifo := conformance.Mutant(QueueFairApproach, "mysql-queue-fair-lifo", func(l impls.Locker) { l.(*QueueFair).headQuery = lifoHead })
	conformance.RequireFailure(t, testCluster, lifo, "/FairGrantOrder")
}

// A waiter that crashed at the head of the queue (it never deletes its
// place) holds up a free lock until its place expires: QueueWaiterTTL after
// its last refresh, whatever the holder's TTL, so at most 2 s after the
// crash. A holder that keeps the lock past that point loses nothing to the
// dead waiter. docs/approaches.md states the figures.
func TestQueueFairDeadWaiterAtTheHead(t *testing.T) {
	for _, tt := range []struct {
		name string
		hold time.Duration // how long after the crash the holder releases
	}{
		{"released at the crash", 0},
		{"released after the place expired", 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			deadWaiterAtTheHead(t, "queue-dead-waiter-"+impls.NewToken()[:8], tt.hold)
		})
	}
}

func deadWaiterAtTheHead(t *testing.T, key string, hold time.Duration) {
	ctx := context.Background()
	direct, err := open(ctx, impls.MySQL, []string{testCluster.DirectEndpoints().DSN(impls.MySQL)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	queued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var got int
			if err := direct.QueryRowContext(ctx, "SELECT COUNT(*) FROM locklab_queue_waiter WHERE lock_key = ? AND expires_at > NOW(6)", key).Scan(&got); err != nil {
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
	stalls := stall.NewWatch(t.Context())
	holder, dead, live := newLocker(t, QueueFairApproach, 1), newLocker(t, QueueFairApproach, 2), newLocker(t, QueueFairApproach, 3)
	held := acquire(t, holder, key, impls.AcquireOptions{TTL: 30 * time.Second}, 5*time.Second)
	deadGone := make(chan error, 1)
	go func() {
		_, err := dead.Acquire(ctx, key, impls.AcquireOptions{})
		deadGone <- err
	}()
	queued(1)
	type grant struct {
		at    time.Time
		lease impls.Lease
		err   error
	}
	granted := make(chan grant, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		lease, err := live.Acquire(ctx, key, impls.AcquireOptions{})
		granted <- grant{time.Now(), lease, err}
	}()
	queued(2)
	dead.Close() // a crash: it leaves its place behind
	crashed := time.Now()
	t.Logf("the dead waiter's acquire ended: %v", <-deadGone)
	// What is left of the dead place, by the server's clock, which expires it.
	var leftUs int64
	if err := direct.QueryRowContext(ctx, `SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), MIN(expires_at)) FROM locklab_queue_waiter
WHERE lock_key = ? AND id = (SELECT MIN(id) FROM locklab_queue_waiter WHERE lock_key = ?)`, key, key).Scan(&leftUs); err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(time.Duration(leftUs) * time.Microsecond)
	time.Sleep(hold)
	release(t, held)
	released := time.Now()
	g := <-granted
	if g.err != nil {
		t.Fatalf("the live waiter behind the dead one: %v", g.err)
	}
	release(t, g.lease)
	free := released
	if expires.After(free) {
		free = expires
	}
	t.Logf("the dead waiter crashed %v after its last refresh; the holder released %v after the crash; the dead place expired %v after it; the live waiter was granted %v after it",
		(QueueWaiterTTL - expires.Sub(crashed)).Round(time.Millisecond), released.Sub(crashed).Round(time.Millisecond),
		expires.Sub(crashed).Round(time.Millisecond), g.at.Sub(crashed).Round(time.Millisecond))
	if d := expires.Sub(crashed); d > QueueWaiterTTL+50*time.Millisecond {
		t.Errorf("the dead place expired %v after the crash, want at most QueueWaiterTTL (%v)", d, QueueWaiterTTL)
	}
	if g.at.Before(free.Add(-50 * time.Millisecond)) {
		t.Errorf("granted %v before the dead place expired or the holder released", free.Sub(g.at))
	}
	// A waiter polls every few milliseconds, each poll a few round trips:
	// its grant is due within 100 ms of running and three of this
	// server's round trips, measured now, besides any time this process
	// stood still.
	var roundTrip time.Duration
	for range 3 {
		start := time.Now()
		if err := direct.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		roundTrip = max(roundTrip, time.Since(start))
	}
	bound := 100*time.Millisecond + 3*roundTrip + stalls.Within(free, g.at)
	if late := g.at.Sub(free); late > bound {
		t.Errorf("granted %v after the dead place expired and the holder released, want within a few polls (%v)", late, bound)
	}
}

// A waiter whose place expired while it stalled cannot take its old turn
// back: it joins again at the tail, behind whoever queued in the meantime.
func TestQueueFairStalledWaiterRejoinsAtTheTail(t *testing.T) {
	ctx := context.Background()
	key := "queue-stalled-" + impls.NewToken()[:8]
	holder, stalled := newLocker(t, QueueFairApproach, 1), newLocker(t, QueueFairApproach, 2).(*QueueFair)
	held := acquire(t, holder, key, impls.AcquireOptions{}, 5*time.Second)
	p := &queuePlace{l: stalled, key: key, owner: impls.NewToken()}
	if err := p.join(ctx); err != nil {
		t.Fatal(err)
	}
	first := p.id
	// The stall: the place expires unrefreshed, and another waiter queues.
	time.Sleep(QueueWaiterTTL + 100*time.Millisecond)
	other := &queuePlace{l: stalled, key: key, owner: impls.NewToken()}
	if err := other.join(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.leave(ctx)
	defer p.leave(ctx)
	if err := p.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if p.id <= other.id {
		t.Fatalf("the stalled waiter's place is %d (was %d), want behind the newcomer's %d", p.id, first, other.id)
	}
	var head int64
	if err := stalled.db.QueryRowContext(ctx, queueHeadQuery, key).Scan(&head); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	if head != other.id {
		t.Fatalf("head of the queue is %d, want the newcomer's %d", head, other.id)
	}
	release(t, held)
}

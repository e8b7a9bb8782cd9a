package redis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// Failovers of the Sentinel topology on real servers (FAULTS.md F8). Each
// case takes the current primary, optionally holds replication back first
// (so whether the key reached the replica is certain, not a race), lets
// client A act, kills the primary, waits for Sentinel to promote the
// replica, and asks what client B is told. The topology is made whole
// again after each case (the old primary back as a replica).
func TestSentinelFailover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approach impls.Approach
		hold     bool // hold replication back before A acquires
		// killDuringAcquire kills the primary while A's acquire is in
		// flight (inside WAIT), not after it returned.
		killDuringAcquire bool
		wantA             error // what A's acquire answers (nil: granted)
		bGranted          bool  // B is granted the lock after the failover
		// bGrantedWhole: B is granted once the old primary is back as a
		// replica (WAIT needs one to acknowledge): A's key is gone.
		bGrantedWhole bool
	}{
		// The promoted replica never saw A's key: B is granted the lock
		// while A's lease is valid. Both leases valid: a double grant.
		{name: "lua-unreplicated-double-grant", approach: SentinelLuaApproach, hold: true, bGranted: true},
		// A's key reached the replica before the grant was reported (WAIT
		// acknowledged): the promoted replica keeps the lock.
		{name: "wait-replicated-kept", approach: SentinelLuaWaitApproach, bGranted: false},
		// With replication held back WAIT answers 0: A is not granted
		// (its key taken back), so the lost key costs nothing.
		// The promoted replica has no replica of its own until the old
		// primary is back, so nobody is granted meanwhile (unavailable,
		// never unsafe).
		{name: "wait-unacknowledged-refused", approach: SentinelLuaWaitApproach, hold: true, wantA: impls.ErrNotAcquired, bGrantedWhole: true},
		// The primary dies during the WAIT, after it applied A's SET: A's
		// acquire is indeterminate, B is granted. WAIT did not save the
		// key; only A's honest answer keeps this from being a double
		// grant. A client proceeding on it would hold the lock with B.
		{name: "wait-failover-during-wait", approach: SentinelLuaWaitApproach, hold: true, killDuringAcquire: true, wantA: impls.ErrIndeterminate, bGrantedWhole: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			key := "failover-" + tc.name
			primary, err := testCluster.Leader(ctx, impls.RedisSentinel)
			if err != nil {
				t.Fatal(err)
			}
			a, b := newLocker(t, tc.approach, 1), newLocker(t, tc.approach, 2)
			var held *cluster.HeldReplication
			if tc.hold {
				if held, err = primary.HoldReplication(ctx); err != nil {
					t.Fatal(err)
				}
			}
			killed, restored := false, false
			defer func() {
				if !restored {
					restoreTopology(t, primary, held, killed)
				}
			}()
			// A's lease outlives the whole case: a failover whose election
			// is retried (45 s), B's tries (15 s each) and the restore. At
			// 30 s, a case that took 40 s beside two busy loops saw B
			// granted with the topology whole again: A's key had run out.
			const ttl = 2 * time.Minute
			opt := impls.AcquireOptions{TTL: ttl, Try: true}
			var leaseA impls.Lease
			var errA error
			if tc.killDuringAcquire {
				done := make(chan struct{})
				go func() {
					defer close(done)
					actx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					leaseA, errA = a.Acquire(actx, key, opt)
				}()
				// A's WAIT blocks for up to WaitTimeout (1 s) on the held
				// link once its SET is applied: the primary dies as soon
				// as the key is there. (A fixed 300 ms was not enough
				// with both cores busy: the primary died before the SET,
				// A's retry set the key on the promoted replica, and B
				// found it held.)
				if err := awaitKey(ctx, primary.DirectAddr(), key, 5*time.Second); err != nil {
					t.Fatal(err)
				}
				if err := primary.Kill(); err != nil {
					t.Fatal(err)
				}
				killed = true
				<-done
			} else {
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				leaseA, errA = a.Acquire(actx, key, opt)
				cancel()
				if err := primary.Kill(); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
			switch {
			case tc.wantA == nil && errA != nil:
				t.Fatalf("A's acquire: %v, want granted", errA)
			case tc.wantA != nil && !errors.Is(errA, tc.wantA):
				t.Fatalf("A's acquire: lease %v, err %v; want %v", leaseA, errA, tc.wantA)
			}
			replicas := []string{}
			for _, n := range testCluster.NodesOf(impls.RedisSentinel) {
				if n != primary && (n.Name == cluster.SentinelPrimary || n.Name == cluster.SentinelReplica) {
					replicas = append(replicas, n.DirectAddr())
				}
			}
			// 45 s: an election whose votes split is retried only two
			// failover-timeouts (20 s) after the first attempt.
			if _, err := cluster.WaitPromoted(ctx, replicas, 45*time.Second); err != nil {
				t.Fatal(err)
			}
			// B's tries that are not to be granted take a short lease: one
			// answered indeterminate (its WAIT cut short on a loaded
			// machine) leaves its key, which must be gone by the time the
			// topology is whole again and B asks once more.
			optB := opt
			if !tc.bGranted {
				optB.TTL = 2 * time.Second
			}
			leaseB, errB := tryUntilAnswered(b, key, optB, 15*time.Second)
			if tc.bGranted != (errB == nil) {
				t.Fatalf("after the failover B's acquire: err %v; want granted = %v", errB, tc.bGranted)
			}
			if !tc.bGranted {
				restored = true
				restoreTopology(t, primary, held, killed)
				leaseB, errB = tryUntilAnswered(b, key, opt, 15*time.Second)
				if tc.bGrantedWhole && errors.Is(errB, impls.ErrNotAcquired) {
					// Held: by A's key, or by a key of B's own left by a
					// try answered indeterminate, which expires within
					// optB.TTL (A's would hold for minutes).
					time.Sleep(optB.TTL)
					leaseB, errB = tryUntilAnswered(b, key, opt, 15*time.Second)
				}
				if tc.bGrantedWhole != (errB == nil) {
					t.Fatalf("with the topology whole again B's acquire: err %v; want granted = %v", errB, tc.bGrantedWhole)
				}
			}
			if leaseA != nil && leaseB != nil {
				now := time.Now()
				if !leaseA.ValidUntil().After(now) || !leaseB.ValidUntil().After(now) {
					t.Fatalf("A valid until %v, B until %v: want both valid now", leaseA.ValidUntil(), leaseB.ValidUntil())
				}
				t.Logf("double grant: A and B both hold %s, leases valid for %v and %v", key,
					time.Until(leaseA.ValidUntil()).Round(time.Second), time.Until(leaseB.ValidUntil()).Round(time.Second))
			}
		})
	}
}

func newLocker(t *testing.T, a impls.Approach, id int) impls.Locker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := a.New(ctx, impls.Env{Endpoints: testCluster.Endpoints(), Clock: &clock.Skewable{}, ClientID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// tryUntilAnswered tries key until the service gives a definite answer:
// until the Sentinels name the new primary and the client reconnects,
// acquires are unavailable or indeterminate.
func tryUntilAnswered(l impls.Locker, key string, opt impls.AcquireOptions, within time.Duration) (impls.Lease, error) {
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		lease, err := l.Acquire(ctx, key, opt)
		cancel()
		if err == nil || errors.Is(err, impls.ErrNotAcquired) && !errors.Is(err, impls.ErrIndeterminate) || time.Now().After(deadline) {
			return lease, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// restoreTopology brings the killed primary back; Sentinel makes it a
// replica of the new primary, and the hold on replication ends.
func restoreTopology(t *testing.T, old *cluster.Node, held *cluster.HeldReplication, killed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if killed {
		if err := old.Restart(ctx); err != nil {
			t.Fatalf("restart %s: %v", old.Name, err)
		}
		if err := old.WaitReplicaOf(ctx, 30*time.Second); err != nil {
			t.Fatalf("topology not whole again: %v", err)
		}
	}
	if held != nil {
		if err := held.Reopen(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitKey waits until the Redis server at addr has key.
func awaitKey(ctx context.Context, addr, key string, within time.Duration) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		n, err := c.Exists(ctx, key).Result()
		if err == nil && n == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: key %s not set within %v (last error: %v)", addr, key, within, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

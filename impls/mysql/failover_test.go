package mysql

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// Failovers of the replicated MariaDB topologies on real servers, one step
// at a time: the current primary; replication held back; client A acts
// (acquires, or releases a lock it took before the cut); the primary is
// killed and the replica promoted; what is client B told? The topology is
// made whole after each case (the old primary back as a replica).
//
// Asynchronous: what A did after the cut is gone. A grant lost is granted
// again to B while A holds (a double grant); a release lost brings A's row
// back, held by nobody, for ever. Semi-synchronous (AFTER_SYNC): A's write
// waits for the replica's receipt, so within rpl_semi_sync_master_timeout
// A is never told "granted" of a row the replica lacks (its acquire is
// indeterminate when the primary dies under it); past the timeout (10 s)
// the primary gives up waiting and reports the grant all the same, which
// the failover then loses, as without semi-sync; an acquire that commits a
// transaction (mysql-sharded) cannot give up waiting, and so is told
// "granted" after the timeout whatever its deadline. A row lock (FOR UPDATE)
// writes nothing: nothing waits, nothing replicates, and the new primary
// grants it again in both modes.
func TestDBFailover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approach impls.Approach
		// warm: A takes and releases the lock once before the cut, so
		// its rows exist on both nodes.
		warm bool
		// release: A holds the lock from before the cut and releases it
		// after; otherwise A acquires after the cut.
		release bool
		within  time.Duration // how long A's call may take
		wantA   error         // A's outcome: nil granted (or released)
		bGets   bool          // B is granted the lock after the failover
	}{
		{name: "async-insert-delete-grant-lost", approach: InsertDeleteReplicatedApproach, within: 3 * time.Second, bGets: true},
		{name: "async-sharded-grant-lost", approach: ShardedReplicatedApproach, within: 3 * time.Second, bGets: true},
		{name: "async-for-update-never-replicated", approach: ForUpdateReplicatedApproach, warm: true, within: 3 * time.Second, bGets: true},
		{name: "async-insert-delete-release-lost", approach: InsertDeleteReplicatedApproach, release: true, within: 3 * time.Second, bGets: false},
		{name: "semisync-insert-delete-grant-waits", approach: InsertDeleteSemiSyncApproach, within: 3 * time.Second, wantA: impls.ErrIndeterminate, bGets: true},
		// A transaction's COMMIT cannot be given up: database/sql's
		// Commit ignores the context once sent, so the acquire waits the
		// timeout out, well past its own deadline, and reports the grant
		// the failover then loses.
		{name: "semisync-sharded-commit-outlasts-deadline", approach: ShardedSemiSyncApproach, within: 3 * time.Second, bGets: true},
		{name: "semisync-insert-delete-past-timeout", approach: InsertDeleteSemiSyncApproach, within: 15 * time.Second, bGets: true},
		{name: "semisync-for-update-never-replicated", approach: ForUpdateSemiSyncApproach, warm: true, within: 3 * time.Second, bGets: true},
		{name: "semisync-insert-delete-release-waits", approach: InsertDeleteSemiSyncApproach, release: true, within: 3 * time.Second, wantA: impls.ErrIndeterminate, bGets: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			key := "failover-" + tc.name
			s := tc.approach.Server
			primary, err := testCluster.Leader(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			a, b := newLocker(t, tc.approach, 1), newLocker(t, tc.approach, 2)
			const ttl = 60 * time.Second
			opt := impls.AcquireOptions{TTL: ttl, Try: true}
			if tc.warm {
				release(t, acquire(t, a, key, opt, 5*time.Second))
			}
			var held impls.Lease
			if tc.release {
				held = acquire(t, a, key, opt, 5*time.Second)
			}
			cut, err := primary.CutDBReplication(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			killed := false
			defer func() { restoreTopology(t, primary, cut, killed) }()
			actx, cancel := context.WithTimeout(ctx, tc.within)
			start := time.Now()
			var leaseA impls.Lease
			var errA error
			if tc.release {
				errA = held.Release(actx)
			} else {
				leaseA, errA = a.Acquire(actx, key, opt)
			}
			cancel()
			t.Logf("A's %s after the cut: %v in %v", map[bool]string{true: "release", false: "acquire"}[tc.release],
				errA, time.Since(start).Round(10*time.Millisecond))
			if tc.wantA == nil && errA != nil || tc.wantA != nil && !errors.Is(errA, tc.wantA) {
				t.Fatalf("A: %v, want %v", errA, tc.wantA)
			}
			if err := primary.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
			if err := cut.Promote(ctx, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			// A semi-synchronous primary with no replica left waits the
			// timeout (10 s) on each commit before it goes on: B is given
			// long enough for one.
			bctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			leaseB, errB := b.Acquire(bctx, key, opt)
			cancel()
			if tc.bGets != (errB == nil) {
				t.Fatalf("after the failover B's acquire: %v; want granted = %v", errB, tc.bGets)
			}
			if !tc.bGets && !errors.Is(errB, impls.ErrNotAcquired) {
				t.Fatalf("B: %v, want not acquired", errB)
			}
			if leaseA != nil && leaseB != nil {
				t.Logf("double grant: A and B both hold %s", key)
			}
		})
	}
}

// restoreTopology brings the old primary back as a replica and ends the
// hold, failing the test if the topology does not come whole.
func restoreTopology(t *testing.T, old *cluster.Node, cut cluster.DBReplicationCut, killed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if killed {
		if err := old.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cut.Rejoin(ctx, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := cut.Reopen(ctx); err != nil {
		t.Fatal(err)
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

func acquire(t *testing.T, l impls.Locker, key string, opt impls.AcquireOptions, within time.Duration) impls.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	lease, err := l.Acquire(ctx, key, opt)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	return lease
}

func release(t *testing.T, lease impls.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
}

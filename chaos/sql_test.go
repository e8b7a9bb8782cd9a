package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// TestPartitionAndSessionLocks: FAULTS.md §2.9 on a real PostgreSQL. A
// session lock (pg_advisory_lock) held through a holding partition is still
// held after the heal, by a session that still works, as on a real network;
// the resetting partition closes the session at the heal, and the server
// frees the lock.
func TestPartitionAndSessionLocks(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Postgres: 1}})
	node := c.Nodes()[0]
	ctx := context.Background()
	observer, err := pgx.Connect(ctx, c.DirectEndpoints().DSN(impls.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close(ctx)
	for i, tc := range []struct {
		mode      string
		keepsLock bool
	}{
		{"hold", true},
		{"reset", false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			lock := int64(4200 + i)
			holder, err := pgx.Connect(ctx, c.Endpoints().DSN(impls.Postgres))
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close(ctx)
			if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", lock); err != nil {
				t.Fatal(err)
			}
			h := inject(t, &Partition{Mode: tc.mode}, NodeTarget(node))
			time.Sleep(quiet)
			heal(t, h)
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err = holder.Exec(qctx, "SELECT 1")
			if alive := err == nil; alive != tc.keepsLock {
				t.Fatalf("the holder's session after the heal: err %v, want alive: %v", err, tc.keepsLock)
			}
			// A freed lock frees within moments of the close; a kept one
			// must still be held after as long.
			var free bool
			for deadline := time.Now().Add(2 * time.Second); !free && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if err := observer.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lock).Scan(&free); err != nil {
					t.Fatal(err)
				}
			}
			if free == tc.keepsLock {
				t.Fatalf("after a %s partition the session lock is free: %v, want %v", tc.mode, free, !tc.keepsLock)
			}
		})
	}
}

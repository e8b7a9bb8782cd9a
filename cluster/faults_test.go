package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
)

// Every server fault acts on the whole server (its process group): after
// Kill no process of the server is left and it answers nothing; after
// Pause it answers nothing until Resume; Restart works three times in a
// row on the same port and data dir. For every server kind locklab starts.
func TestServerFaultsActOnTheWholeServer(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	ctx := context.Background()
	c, err := StartLocal(ctx, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1, impls.MySQL: 1, impls.ZooKeeper: 3, impls.Postgres: 1, impls.Etcd: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, kind := range []impls.Server{impls.Redis, impls.MySQL, impls.ZooKeeper, impls.Postgres, impls.Etcd} {
		t.Run(string(kind), func(t *testing.T) {
			n := c.NodesOf(kind)[0]
			answers := pauseAndResume(t, n)
			for i := 1; i <= 3; i++ {
				pgid := n.Pid()
				tree := append([]int{pgid}, spawn.Descendants(pgid)...)
				if err := n.Kill(); err != nil {
					t.Fatal(err)
				}
				if groupHasLive(pgid) || allGone(tree, 0) != nil {
					t.Fatalf("kill %d: processes of the server (%v) are still alive", i, tree)
				}
				if err := answers(); err == nil {
					t.Fatalf("kill %d: a killed server answered", i)
				}
				rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				err := n.Restart(rctx)
				cancel()
				if err != nil {
					t.Fatalf("restart %d: %v", i, err)
				}
			}
		})
	}
}

// A paused PostgreSQL grants no advisory lock, even on a connection opened
// before the pause (its backend is paused with the postmaster), and a
// killed one's backends are gone with it: the lock they held is free
// after the restart.
func TestPostgresBackendsFollowTheServer(t *testing.T) {
	ctx := context.Background()
	c, err := StartLocal(ctx, LocalConfig{Nodes: map[impls.Server]int{impls.Postgres: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := c.NodesOf(impls.Postgres)[0]
	dsn := c.DirectEndpoints().DSN(impls.Postgres)
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock(42)"); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	// Paused, the server must not answer within 700 ms; resumed, it is
	// given as long as a starved machine takes (two busy loops beside the
	// suite: a fresh connection's first query took over 700 ms).
	try := func(within time.Duration) (bool, error) {
		tctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		var got bool
		err := other.QueryRow(tctx, "SELECT pg_try_advisory_lock(42)").Scan(&got)
		return got, err
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	got, err := try(700 * time.Millisecond)
	n.Resume()
	if err == nil {
		t.Fatalf("a paused PostgreSQL answered (granted=%v)", got)
	}
	// The timed-out query closed that connection; a fresh one sees the
	// lock still held by the holder's backend.
	other.Close(ctx)
	if other, err = pgx.Connect(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if got, err := try(30 * time.Second); err != nil || got {
		t.Fatalf("after resume: granted=%v err=%v, want held by the first session", got, err)
	}
	pgid := n.Pid()
	tree := append([]int{pgid}, spawn.Descendants(pgid)...)
	if len(tree) < 3 {
		t.Fatalf("PostgreSQL with two sessions open has processes %v: its backends must be found", tree)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := allGone(tree, 0); err != nil {
		t.Fatalf("backends survived the kill: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := n.Restart(rctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	fresh, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	var got2 bool
	if err := fresh.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got2); err != nil || !got2 {
		t.Fatalf("after the restart the lock must be free: granted=%v err=%v", got2, err)
	}
	holder.Close(ctx)
}

// pauseAndResume checks that a healthy node answers, answers nothing while
// paused and answers again after Resume; it returns the check it used.
func pauseAndResume(t *testing.T, n *Node) (answers func() error) {
	t.Helper()
	ctx := context.Background()
	answers = func() error {
		hctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		defer cancel()
		return n.health(hctx)
	}
	// The baseline waits as the health check does (PostgreSQL took more
	// than 700 ms to answer beside two busy loops); the tries that must
	// fail below keep 700 ms.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := waitHealthy(wctx, n); err != nil {
		t.Fatalf("healthy server does not answer: %v", err)
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := answers(); err == nil {
		n.Resume()
		t.Fatal("a paused server answered")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := waitHealthy(ctx, n); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	return answers
}

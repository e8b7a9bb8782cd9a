package chaos

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// cluster.Node and cluster.PlannedNode are what db-failover needs.
var (
	_ DBFailoverNode = (*cluster.Node)(nil)
	_ DBFailoverNode = cluster.PlannedNode{}
)

// TestDBFailover: the db-failover fault on a real replicated MariaDB. A
// row the primary commits while replication is held back is gone once the
// fault has promoted the replica, which then leads and takes writes; the
// heal brings the old primary back as a replica of the new one, in step and
// without that row. The roles swap at each case, and the next case fails
// over whichever node leads. With replication kept (the control case) the
// row survives the failover.
func TestDBFailover(t *testing.T) {
	c := startCluster(t, cluster.ForServers(impls.MySQLReplicated))
	ctx := context.Background()
	for i, tc := range []struct {
		mode, replication string
		kept              bool // the row committed after the cut survives
	}{
		{"kill", "hold", false},
		{"pause", "hold", false},
		{"kill", "keep", true},
	} {
		t.Run(tc.mode+"-"+tc.replication, func(t *testing.T) {
			old, err := c.Leader(ctx, impls.MySQLReplicated)
			if err != nil {
				t.Fatal(err)
			}
			p := rootDB(t, old.DirectAddr())
			if _, err := p.Exec("CREATE TABLE IF NOT EXISTS locklab.dbf (k INT PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			f := &DBFailover{Mode: tc.mode, Replication: tc.replication, After: Duration(time.Second)}
			if err := f.Available(NodeTarget(old)); err != nil {
				t.Fatal(err)
			}
			type injection struct {
				h   Heal
				err error
			}
			injected := make(chan injection, 1)
			go func() {
				h, err := InjectAll(ctx, f, []Target{NodeTarget(old)})
				injected <- injection{h, err}
			}()
			time.Sleep(300 * time.Millisecond) // the cut is made; the primary still serves
			_, werr := p.Exec("INSERT INTO locklab.dbf VALUES (?)", i)
			in := <-injected
			if in.err != nil {
				t.Fatal(in.err)
			}
			h := once(in.h)
			t.Cleanup(func() { h(ctx) })
			if werr != nil {
				t.Fatal(werr)
			}
			leader, err := c.Leader(ctx, impls.MySQLReplicated)
			if err != nil || leader == old {
				t.Fatalf("leader after the failover: %v, %v; want the other node", leader, err)
			}
			n := rootDB(t, leader.DirectAddr())
			if got := hasRow(t, n, i); got != tc.kept {
				t.Errorf("row committed after the cut on the new primary: %v, want %v", got, tc.kept)
			}
			if _, err := n.Exec("INSERT INTO locklab.dbf VALUES (?)", 100+i); err != nil {
				t.Fatalf("the new primary takes no writes: %v", err)
			}
			heal(t, h)
			if role, err := old.Role(ctx); err != nil || role != cluster.RoleFollower {
				t.Fatalf("the old primary after the heal: role %q, %v; want follower", role, err)
			}
			o := rootDB(t, old.DirectAddr())
			if !hasRow(t, o, 100+i) || hasRow(t, o, i) != tc.kept {
				t.Errorf("the old primary is not in step with the new one")
			}
			if err := cluster.NodesHealthy(ctx, 10*time.Second, c.NodesOf(impls.MySQLReplicated)); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Anything else is refused, before and at injection.
	redisLike := Target{Kind: TargetNode, Name: "mysql-replicated-1"}
	if err := (&DBFailover{}).Available(redisLike); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a node locklab does not run: %v", err)
	}
}

func rootDB(t *testing.T, a string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", a
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

func hasRow(t *testing.T, db *sql.DB, k int) bool {
	t.Helper()
	var got int
	err := db.QueryRow("SELECT k FROM locklab.dbf WHERE k = ?", k).Scan(&got)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return err == nil
}

package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func zkConnect(t *testing.T, servers []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := zk.Connect(servers, timeout, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-deadline:
			t.Fatalf("no session with %v", servers)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return conn, events
}

// TestZooKeeperSessionAcrossHoldingPartition: a holding partition of every
// ZooKeeper node keeps the client's heartbeats from the servers, so a
// session held through a partition longer than its timeout expires on the
// servers during the partition (its ephemeral node goes), and the client
// learns it after the heal. A partition shorter than the timeout costs the
// session nothing: the held pings arrive at the heal on the same connection.
func TestZooKeeperSessionAcrossHoldingPartition(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.ZooKeeper: 3}})
	nodes := c.Nodes()
	var proxied, direct []string
	for _, n := range nodes {
		proxied = append(proxied, n.Addr())
		direct = append(direct, n.DirectAddr())
	}
	observer, _ := zkConnect(t, direct, 4*time.Second) // never partitioned

	// ZooKeeper grants 2 s (within its 2..20 ticks of 200 ms); the client
	// pings every third of it and gives a connection up after two thirds.
	const sessionTimeout = 2 * time.Second
	for _, tc := range []struct {
		name      string
		partition time.Duration
		expires   bool
	}{
		{"shorter than the session", 400 * time.Millisecond, false},
		{"longer than the session", sessionTimeout + 1500*time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, events := zkConnect(t, proxied, sessionTimeout)
			session := conn.SessionID()
			path := "/" + randomKey("chaos")
			if _, err := conn.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			// Drain the connect events so only what follows is seen.
			for len(events) > 0 {
				<-events
			}
			h := inject(t, &Partition{}, NodeTargets(nodes)...)
			time.Sleep(tc.partition)
			exists, _, err := observer.Exists(path)
			if err != nil {
				t.Fatal(err)
			}
			if exists == tc.expires {
				t.Fatalf("after a %v partition of a %v session the ephemeral node exists: %v, want %v",
					tc.partition, sessionTimeout, exists, !tc.expires)
			}
			heal(t, h)
			if !tc.expires {
				// Still the same session, still serving, the node still there.
				if _, _, err := conn.Exists(path); err != nil {
					t.Fatalf("after a short partition: %v", err)
				}
				if conn.SessionID() != session {
					t.Fatalf("session changed from %x to %x", session, conn.SessionID())
				}
				for len(events) > 0 {
					if ev := <-events; ev.State == zk.StateDisconnected || ev.State == zk.StateExpired {
						t.Fatalf("a partition shorter than the session cost the connection: %v", ev.State)
					}
				}
				return
			}
			deadline := time.After(15 * time.Second)
			for {
				select {
				case ev := <-events:
					if ev.State == zk.StateExpired {
						return
					}
				case <-deadline:
					t.Fatal("the client was never told its session expired")
				}
			}
		})
	}
}

// TestRoles: a ZooKeeper ensemble and an etcd cluster each have exactly one
// leader, the others follow, and a Redis node stands alone; ResolveNodes
// finds them by role (followers: both).
func TestRoles(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.ZooKeeper: 3, impls.Etcd: 3, impls.Redis: 1}})
	ctx := context.Background()
	for _, server := range []string{"zookeeper", "etcd"} {
		t.Run(server, func(t *testing.T) {
			var roles []string
			for _, n := range c.NodesOf(serverKind(server)) {
				r, err := n.Role(ctx)
				if err != nil {
					t.Fatal(err)
				}
				roles = append(roles, r)
			}
			if strings.Count(strings.Join(roles, ","), cluster.RoleLeader) != 1 ||
				strings.Count(strings.Join(roles, ","), cluster.RoleFollower) != 2 {
				t.Fatalf("roles %v, want one leader and two followers", roles)
			}
			leader, err := ResolveNodes(ctx, nodesOf(c), "", Selector{Node: NodeLeader, Server: server}, nil)
			if err != nil || len(leader) != 1 {
				t.Fatalf("leader: %v %v", leader, err)
			}
			if r, _ := leader[0].Role(ctx); r != cluster.RoleLeader {
				t.Fatalf("resolved leader %s has role %s", leader[0].Name, r)
			}
			followers, err := ResolveNodes(ctx, nodesOf(c), "", Selector{Node: NodeFollowers, Server: server}, nil)
			if err != nil || len(followers) != 2 {
				t.Fatalf("followers: %v %v, want both", followers, err)
			}
			for _, f := range followers {
				if r, _ := f.Role(ctx); r != cluster.RoleFollower || f == leader[0] {
					t.Fatalf("resolved follower %s has role %s", f.Name, r)
				}
			}
			l2, err := c.Leader(ctx, serverKind(server))
			if err != nil || l2 != leader[0] {
				t.Fatalf("Cluster.Leader = %v %v, want %s", l2, err, leader[0].Name)
			}
		})
	}
	if r, err := c.NodesOf(serverKind("redis"))[0].Role(ctx); err != nil || r != cluster.RoleStandalone {
		t.Fatalf("redis role %q %v", r, err)
	}
}

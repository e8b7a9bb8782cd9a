package chaos

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// TestResolveNodes: node selectors against a real cluster (3 Redis, so
// counting modes have something to count), and the targets they make.
func TestResolveNodes(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 3}})
	ctx := context.Background()
	for _, tc := range []struct {
		sel   Selector
		count int
		names string // when the choice is not random
		err   string
	}{
		{sel: Selector{Node: NodeOne, Server: "redis"}, count: 1},
		{sel: Selector{Node: NodeMinority, Server: "redis"}, count: 1},
		{sel: Selector{Node: NodeMajority}, count: 2},
		{sel: Selector{Node: NodeAll, Server: "redis"}, count: 3, names: "redis-0,redis-1,redis-2"},
		{sel: Selector{Node: "redis-2"}, count: 1, names: "redis-2"},
		{sel: Selector{Nodes: []string{"redis-2", "redis-0"}}, count: 2, names: "redis-2,redis-0"},
		{sel: Selector{Node: "redis-9"}, err: `no node "redis-9" (nodes: redis-0, redis-1, redis-2)`},
		{sel: Selector{Node: NodeOne, Server: "zookeeper"}, err: "no zookeeper nodes in this run"},
		{sel: Selector{Node: NodeLeader, Server: "redis"}, err: "no redis leader answers now"},
	} {
		t.Run(tc.sel.String(), func(t *testing.T) {
			nodes, err := ResolveNodes(ctx, nodesOf(c), "", tc.sel, newRand(3))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
			}
			if len(nodes) != tc.count || (tc.names != "" && strings.Join(names, ",") != tc.names) {
				t.Fatalf("nodes %v, want %d (%s)", names, tc.count, tc.names)
			}
			again, _ := ResolveNodes(ctx, nodesOf(c), "", tc.sel, newRand(3))
			if len(again) != len(nodes) || again[0] != nodes[0] {
				t.Fatalf("one seed, two choices")
			}
		})
	}
	if _, err := ResolveNodes(ctx, nodesOf(c), "redis", Selector{Node: NodeLeader}, nil); !errors.Is(err, ErrNoTarget) {
		t.Errorf("leader among standalone servers: %v, want ErrNoTarget", err)
	}
	tg := NodeTarget(c.Nodes()[0])
	if tg.Kind != TargetNode || tg.Process == nil || len(tg.Links) != 1 || tg.Links[0] != c.Nodes()[0].Proxy() {
		t.Errorf("node target %+v", tg)
	}
}

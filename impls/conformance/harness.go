package conformance

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// Main starts the real servers a backend package's tests need, runs the
// tests, and stops the servers: call it from TestMain.
func Main(m *testing.M, cfg cluster.LocalConfig, started func(*cluster.Cluster)) int {
	c, err := cluster.StartLocal(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start servers:", err)
		return 1
	}
	defer c.Close()
	started(c)
	return m.Run()
}

// RunRegistered runs the suite for every approach that register adds,
// against c, dropping replies of the backend's first node.
func RunRegistered(t *testing.T, c *cluster.Cluster, register func(*impls.Registry)) {
	r := impls.NewRegistry()
	register(r)
	for _, a := range r.All() {
		t.Run(a.Name, func(t *testing.T) {
			nodes := c.NodesOf(a.Backend)
			if len(nodes) == 0 {
				t.Fatalf("no %s nodes in the cluster", a.Backend)
			}
			Run(t, Harness{
				Approach:    a,
				Endpoints:   c.Endpoints(),
				DropReplies: chaos.DropReplies{Proxy: nodes[0].Proxy()},
			})
		})
	}
}

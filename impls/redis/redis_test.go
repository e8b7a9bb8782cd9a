package redis

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/conformance"
)

var testCluster *cluster.Cluster

// TestMain starts real redis-server nodes for the package's tests.
func TestMain(m *testing.M) {
	c, err := cluster.StartLocal(context.Background(), cluster.LocalConfig{RedisNodes: 5})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start redis:", err)
		os.Exit(1)
	}
	testCluster = c
	code := m.Run()
	c.Close()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	r := impls.NewRegistry()
	Register(r)
	for _, a := range r.All() {
		t.Run(a.Name, func(t *testing.T) {
			conformance.Run(t, conformance.Harness{
				Approach:    a,
				Endpoints:   testCluster.Endpoints(),
				DropReplies: chaos.DropReplies{Proxy: testCluster.NodesOf(impls.Redis)[0].Proxy()},
			})
		})
	}
}

package mysql

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

// TestMain starts a real MariaDB for the package's tests.
func TestMain(m *testing.M) {
	c, err := cluster.StartLocal(context.Background(), cluster.LocalConfig{MySQL: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start mariadb:", err)
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
				DropReplies: chaos.DropReplies{Proxy: testCluster.NodesOf(impls.MySQL)[0].Proxy()},
			})
		})
	}
}

package indocker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
)

var testCluster *cluster.Cluster

// TestMain starts every server kind, the Sentinel and replicated MariaDB topologies included, as
// containers from the local images.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cfg := cluster.ForServers(impls.Redis, impls.MySQL, impls.ZooKeeper, impls.Postgres, impls.Etcd, impls.RedisSentinel,
		impls.MySQLReplicated, impls.MySQLSemiSync)
	cfg.StartTimeout = 3 * time.Minute
	c, err := cluster.StartDocker(context.Background(), cluster.DockerConfig{LocalConfig: cfg, Images: cluster.LocalImages(), Connect: docker.Connect})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the Docker cluster (images from scripts/images.sh):", err)
		return 1
	}
	defer c.Close()
	testCluster = c
	return m.Run()
}

// Every approach passes the suite.
func TestConformance(t *testing.T) {
	conformance.RunRegistered(t, testCluster, func(r *impls.Registry) {
		for _, a := range all.Registry().All() {
			r.Register(a)
		}
	})
}

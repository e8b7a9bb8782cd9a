package etcd

import (
	"os"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
)

var testCluster *cluster.Cluster

// TestMain starts a real 3-node etcd cluster for the package's tests.
func TestMain(m *testing.M) {
	os.Exit(conformance.Main(m, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Etcd: 3}}, func(c *cluster.Cluster) { testCluster = c }))
}

func TestConformance(t *testing.T) { conformance.RunRegistered(t, testCluster, Register) }

func BenchmarkApproaches(b *testing.B) { conformance.BenchRegistered(b, testCluster, Register) }

func TestBeliefFollowsKeepAlives(t *testing.T) {
	conformance.BeliefFollowsHeartbeats(t, testCluster, LeaseApproach, DefaultTTL)
}

package pg

import (
	"os"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
)

var testCluster *cluster.Cluster

// TestMain starts a real PostgreSQL for the package's tests.
func TestMain(m *testing.M) {
	os.Exit(conformance.Main(m, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Postgres: 1}}, func(c *cluster.Cluster) { testCluster = c }))
}

func TestConformance(t *testing.T) { conformance.RunRegistered(t, testCluster, Register) }

func BenchmarkApproaches(b *testing.B) { conformance.BenchRegistered(b, testCluster, Register) }

package mysql

import (
	"os"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
)

var testCluster *cluster.Cluster

// TestMain starts the real servers for the package's tests.
func TestMain(m *testing.M) {
	os.Exit(conformance.Main(m, cluster.ForServers(impls.MySQL, impls.MySQLReplicated, impls.MySQLSemiSync), func(c *cluster.Cluster) { testCluster = c }))
}

func TestConformance(t *testing.T) { conformance.RunRegistered(t, testCluster, Register) }

func BenchmarkApproaches(b *testing.B) { conformance.BenchRegistered(b, testCluster, Register) }

package conformance

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// Main starts the real servers an approach package's tests need, runs the
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
// against c; the faults hit every node of the approach's server kind.
func RunRegistered(t *testing.T, c *cluster.Cluster, register func(*impls.Registry)) {
	r := impls.NewRegistry()
	register(r)
	for _, a := range r.All() {
		t.Run(a.Name, func(t *testing.T) {
			h, err := HarnessFor(c, a)
			if err != nil {
				t.Fatal(err)
			}
			Run(t, h)
		})
	}
}

// HarnessFor connects the suite to approach a on c: clients through the
// proxies, faults on every node of a's server kind, and those nodes to
// kill where locklab can kill and start them (it runs them, or the user
// gave the fault commands).
func HarnessFor(c *cluster.Cluster, a impls.Approach) (Harness, error) {
	nodes := c.NodesOf(a.Server)
	if len(nodes) == 0 {
		return Harness{}, fmt.Errorf("no %s servers in the cluster, which %s needs", a.Server, a.Name)
	}
	targets := chaos.NodeTargets(nodes)
	var killable []Node
	for _, n := range nodes {
		if n.CanRestart() == nil {
			killable = append(killable, n)
		}
	}
	return Harness{
		Approach:        a,
		Endpoints:       c.Endpoints(),
		DirectEndpoints: c.DirectEndpoints(),
		DropReplies:     &fault{f: chaos.DropReplies{}, targets: targets},
		SlowReplies:     &fault{f: chaos.SlowReplies{Latency: chaos.Duration(400 * time.Millisecond)}, targets: targets},
		Partition:       &fault{f: chaos.Partition{}, targets: targets},
		Nodes:           killable,
	}, nil
}

// fault adapts a chaos fault on fixed targets to the suite's Inject/Heal.
type fault struct {
	f       chaos.Fault
	targets []chaos.Target
	heal    chaos.Heal
}

func (x *fault) Inject(ctx context.Context) error {
	h, err := chaos.InjectAll(ctx, x.f, x.targets)
	x.heal = h
	return err
}

// Heal undoes the last injection; a second call does nothing.
func (x *fault) Heal(ctx context.Context) error {
	h := x.heal
	x.heal = nil
	if h == nil {
		return nil
	}
	return h(ctx)
}

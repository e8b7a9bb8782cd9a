package conformance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
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
// Approaches of one server kind run one after the other (a test restarts
// every server of its kind); kinds run side by side, two at a time, as
// subtests named by kind (TestConformance/redis/redis-setnx-px-lua/...):
// they share nothing and mostly wait on their servers, but with four at
// once beside two busy loops the containers starved (ZooKeeper hand-offs
// of 1.6 s, MariaDB replicas that took no writes).
func RunRegistered(t *testing.T, c *cluster.Cluster, register func(*impls.Registry)) {
	r := impls.NewRegistry()
	register(r)
	var kinds []impls.Server
	byKind := map[impls.Server][]impls.Approach{}
	for _, a := range r.All() {
		if _, ok := byKind[a.Server]; !ok {
			kinds = append(kinds, a.Server)
		}
		byKind[a.Server] = append(byKind[a.Server], a)
	}
	// The kinds with the most approaches first: the run ends on none of
	// them alone.
	slices.SortStableFunc(kinds, func(a, b impls.Server) int { return len(byKind[b]) - len(byKind[a]) })
	turns := make(chan struct{}, 2)
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			turns <- struct{}{}
			defer func() { <-turns }()
			for _, a := range byKind[k] {
				t.Run(a.Name, func(t *testing.T) {
					h, err := HarnessFor(c, a)
					if err != nil {
						t.Fatal(err)
					}
					Run(t, h)
				})
			}
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

// RequireFailure runs the suite's test named test (its name's last part,
// "/FairGrantOrder") on a, a mutant declaring what it does not do, against
// c, and fails t unless the suite fails it: a test that passed everything
// would go unseen.
func RequireFailure(t *testing.T, c *cluster.Cluster, a impls.Approach, test string) {
	t.Helper()
	h, err := HarnessFor(c, a)
	if err != nil {
		t.Fatal(err)
	}
	run := Standalone{Match: func(name string) bool { return strings.HasSuffix(name, test) }}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	results, err := run.Run(ctx, a.Name, func(t T) { RunT(t, h) })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if strings.HasSuffix(r.Name, test) {
			if r.Status != Failed {
				t.Fatalf("%s on %s: %s, want FAIL (output: %v)", test, a.Name, r.Status, r.Output)
			}
			t.Logf("%s on %s: %s: %s", test, a.Name, r.Status, strings.Join(r.Output, "; "))
			return
		}
	}
	t.Fatalf("%s did not run on %s (results: %v)", test, a.Name, results)
}

// Mutant is a renamed name, every client it makes changed by mutate: a lock
// broken on purpose, for a test the suite must fail it in.
func Mutant(a impls.Approach, name string, mutate func(impls.Locker)) impls.Approach {
	m := a
	m.Name = name
	m.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		l, err := a.New(ctx, env)
		if err == nil {
			mutate(l)
		}
		return l, err
	}
	return m
}

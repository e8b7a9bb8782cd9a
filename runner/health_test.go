package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// ownServers starts servers of the test's own and writes them as an
// external cluster's config, so the test can kill one that locklab cannot
// restart.
func ownServers(t *testing.T, backends ...impls.Server) (*cluster.Cluster, *cluster.ExternalConfig) {
	t.Helper()
	servers, err := cluster.StartLocal(context.Background(), cluster.ForServers(backends...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { servers.Close() })
	ep := servers.DirectEndpoints()
	cfg := fmt.Sprintf("redis: [%s]\n", strings.Join(ep[impls.Redis].Addrs, ", "))
	if len(ep[impls.ZooKeeper].Addrs) > 0 {
		cfg += fmt.Sprintf("zookeeper: [%s]\n", strings.Join(ep[impls.ZooKeeper].Addrs, ", "))
	}
	path := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ext, err := LoadExternal(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	return servers, ext
}

// smallCase is two clients on one key for d, with 5 ms holds.
func smallCase(t *testing.T, approach string, d time.Duration, expect verdict.Expectation) Case {
	t.Helper()
	a, err := serverRegistry().Get(approach)
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Name: a.Name, Approach: a, Record: true, Expect: expect, Workload: workload.Spec{Clients: 2, Keys: 1,
		Kind: workload.Mutex, Hold: workload.Dist{Kind: "fixed", A: 5 * time.Millisecond}, TTL: time.Second,
		AcquireTimeout: time.Second, Duration: d, Seed: 1}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// killAtFirstGrant kills node once the run is under way (a grant seen),
// not before its first health check, however slow the machine.
func killAtFirstGrant(node *cluster.Node) func(Status) {
	var kill sync.Once
	return func(s Status) {
		if s.Acquired > 0 {
			kill.Do(func() { node.Kill() })
		}
	}
}

// A server that dies during a case and does not come back makes the run an
// infrastructure failure (exit 3), named as such, never a verdict: the
// health check after the workload sees it.
func TestServerThatDoesNotRecoverIsAnInfrastructureFailure(t *testing.T) {
	servers, cfg := ownServers(t, impls.Redis)
	c := smallCase(t, "redis-setnx-px-lua", 3*time.Second, verdict.Expectation{})
	p := Plan{Kind: "test", Cases: []Case{c}, ResultsDir: t.TempDir(), External: cfg}
	_, err := (&Runner{HealthTimeout: 3 * time.Second, Progress: killAtFirstGrant(servers.NodesOf(impls.Redis)[0])}).Run(context.Background(), p)
	if !errors.Is(err, ErrInfra) || !strings.Contains(err.Error(), "servers did not recover") {
		t.Fatalf("err = %v, want an infrastructure failure saying the servers did not recover", err)
	}
}

// When one lane of a parallel run fails (its servers did not recover), the
// cases of the other lanes are cut short, and what they saw is not
// recorded as an observation: a case due to show a violation must not read
// as having missed it.
func TestLaneCutShortByAnotherLanesFailureIsNotRecorded(t *testing.T) {
	servers, cfg := ownServers(t, impls.Redis, impls.ZooKeeper)
	failing := smallCase(t, "redis-setnx-px-lua", 2*time.Second, verdict.Expect("test", verdict.Safe))
	// A violation zk-sequential never shows: recorded, it would be a miss.
	cut := smallCase(t, "zk-sequential", 30*time.Second, verdict.Expect("test", verdict.DoubleGrant))
	p := Plan{Kind: "test", Cases: []Case{failing, cut}, ResultsDir: t.TempDir(), External: cfg}
	start := time.Now()
	out, err := (&Runner{Parallel: true, HealthTimeout: 2 * time.Second, Progress: killAtFirstGrant(servers.NodesOf(impls.Redis)[0])}).Run(context.Background(), p)
	if !errors.Is(err, ErrInfra) {
		t.Fatalf("err = %v, want the failed lane's infrastructure failure", err)
	}
	if took := time.Since(start); took > 25*time.Second {
		t.Fatalf("the run took %v: the other lane was not cut short", took)
	}
	for _, v := range out.Verdicts {
		if v.Missed {
			t.Fatalf("a case cut short was recorded as missing its violation: %s", v.Text)
		}
	}
	for _, r := range out.Results.Runs {
		if r.Case == cut.Name {
			t.Fatalf("the case cut short was recorded: %+v", r)
		}
	}
}

// A case checks the health of its own servers only: a server of another
// kind that is down (another lane's fault, such as a failover lane's
// primary, killed for half a minute) neither holds it up nor fails it.
func TestCaseChecksOnlyItsOwnServers(t *testing.T) {
	servers, cfg := ownServers(t, impls.Redis, impls.ZooKeeper)
	c := smallCase(t, "zk-sequential", 2*time.Second, verdict.Expectation{})
	p := Plan{Kind: "test", Cases: []Case{c}, ResultsDir: t.TempDir(), External: cfg}
	out, err := (&Runner{HealthTimeout: 2 * time.Second, Progress: killAtFirstGrant(servers.NodesOf(impls.Redis)[0])}).Run(context.Background(), p)
	if err != nil {
		t.Fatalf("a ZooKeeper case failed on a dead Redis node: %v", err)
	}
	if len(out.Results.Runs) != 1 || out.Results.Runs[0].Acquired == 0 {
		t.Fatalf("runs = %+v, want one ZooKeeper case with grants", out.Results.Runs)
	}
}

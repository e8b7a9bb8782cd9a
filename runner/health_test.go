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

// A server that dies during a case and does not come back makes the run an
// infrastructure failure (exit 3), named as such, never a verdict: the
// health check after the workload sees it. The servers are the test's own,
// given to the run as an external cluster, so the test can kill one that
// locklab cannot restart.
func TestServerThatDoesNotRecoverIsAnInfrastructureFailure(t *testing.T) {
	ctx := context.Background()
	servers, err := cluster.StartLocal(ctx, cluster.ForBackends(impls.Redis))
	if err != nil {
		t.Fatal(err)
	}
	defer servers.Close()
	cfg := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("redis: [%s]\n", strings.Join(servers.DirectEndpoints().Redis, ", "))), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := serverRegistry().Get("redis-setnx-px-lua")
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Name: a.Name, Approach: a, Record: true, Workload: workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex,
		Hold: workload.Dist{Kind: "fixed", A: 5 * time.Millisecond}, TTL: time.Second, AcquireTimeout: time.Second,
		Duration: 3 * time.Second, Seed: 1}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Killed once the case is under way (a grant seen), not before its
	// first health check, however slow the machine.
	var kill sync.Once
	progress := func(s Status) {
		if s.Acquired > 0 {
			kill.Do(func() { servers.NodesOf(impls.Redis)[0].Kill() })
		}
	}
	p := Plan{Kind: "test", Cases: []Case{c}, ResultsDir: t.TempDir(), External: cfg}
	_, err = (&Runner{HealthTimeout: 3 * time.Second, Progress: progress}).Run(ctx, p)
	if !errors.Is(err, ErrInfra) || !strings.Contains(err.Error(), "servers did not recover") {
		t.Fatalf("err = %v, want an infrastructure failure saying the servers did not recover", err)
	}
}

// When one lane of a parallel run fails (its servers did not recover), the
// cases of the other lanes are cut short, and what they saw is not
// recorded as an observation: a case due to show a violation must not read
// as having missed it.
func TestLaneCutShortByAnotherLanesFailureIsNotRecorded(t *testing.T) {
	ctx := context.Background()
	servers, err := cluster.StartLocal(ctx, cluster.ForBackends(impls.Redis, impls.ZooKeeper))
	if err != nil {
		t.Fatal(err)
	}
	defer servers.Close()
	ep := servers.DirectEndpoints()
	cfg := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("redis: [%s]\nzookeeper: [%s]\n",
		strings.Join(ep.Redis, ", "), strings.Join(ep.ZooKeeper, ", "))), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := func(approach string, d time.Duration, expect verdict.Expectation) Case {
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
	failing := mk("redis-setnx-px-lua", 2*time.Second, verdict.Expect("test", verdict.Safe))
	// A violation zk-sequential never shows: recorded, it would be a miss.
	cut := mk("zk-sequential", 30*time.Second, verdict.Expect("test", verdict.DoubleGrant))
	var kill sync.Once
	progress := func(s Status) {
		if s.Acquired > 0 {
			kill.Do(func() { servers.NodesOf(impls.Redis)[0].Kill() })
		}
	}
	p := Plan{Kind: "test", Cases: []Case{failing, cut}, ResultsDir: t.TempDir(), External: cfg}
	start := time.Now()
	out, err := (&Runner{Parallel: true, HealthTimeout: 2 * time.Second, Progress: progress}).Run(ctx, p)
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
	ctx := context.Background()
	servers, err := cluster.StartLocal(ctx, cluster.ForBackends(impls.Redis, impls.ZooKeeper))
	if err != nil {
		t.Fatal(err)
	}
	defer servers.Close()
	ep := servers.DirectEndpoints()
	cfg := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("redis: [%s]\nzookeeper: [%s]\n",
		strings.Join(ep.Redis, ", "), strings.Join(ep.ZooKeeper, ", "))), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := serverRegistry().Get("zk-sequential")
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Name: a.Name, Approach: a, Record: true, Workload: workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex,
		Hold: workload.Dist{Kind: "fixed", A: 5 * time.Millisecond}, TTL: time.Second, AcquireTimeout: time.Second,
		Duration: 2 * time.Second, Seed: 1}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Killed once the case is under way: its health check after the
	// workload must not care.
	var kill sync.Once
	progress := func(s Status) {
		if s.Acquired > 0 {
			kill.Do(func() { servers.NodesOf(impls.Redis)[0].Kill() })
		}
	}
	p := Plan{Kind: "test", Cases: []Case{c}, ResultsDir: t.TempDir(), External: cfg}
	out, err := (&Runner{HealthTimeout: 2 * time.Second, Progress: progress}).Run(ctx, p)
	if err != nil {
		t.Fatalf("a ZooKeeper case failed on a dead Redis node: %v", err)
	}
	if len(out.Results.Runs) != 1 || out.Results.Runs[0].Acquired == 0 {
		t.Fatalf("runs = %+v, want one ZooKeeper case with grants", out.Results.Runs)
	}
}

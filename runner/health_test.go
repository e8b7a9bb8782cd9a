package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// ownServers starts servers of the test's own and writes them as an
// external cluster's config, so the test can kill one that locklab cannot
// restart. extra is appended to the config (fault commands, say).
func ownServers(t *testing.T, extra string, kinds ...impls.Server) (*cluster.Cluster, *cluster.ExternalConfig) {
	t.Helper()
	servers, err := cluster.StartLocal(context.Background(), cluster.ForServers(kinds...))
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
	if err := os.WriteFile(path, []byte(cfg+extra), 0o644); err != nil {
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

// killAtFirstGrantOf kills the node node() names once case name is under
// way (a grant seen), not before its first health check, however slow the
// machine.
func killAtFirstGrantOf(name string, node func() *cluster.Node) func(Status) {
	var kill sync.Once
	return func(s Status) {
		if s.Case == name && s.Acquired > 0 {
			kill.Do(func() { node().Kill() })
		}
	}
}

// A server that dies during a case and does not come back is a finding
// about the servers, not the end of the run: the case is still checked and
// judged, its results say the servers did not recover, and the next case
// runs on servers started anew.
func TestServerThatDoesNotRecoverIsAFindingAboutTheServers(t *testing.T) {
	first := smallCase(t, "redis-setnx-px-lua", 3*time.Second, verdict.Expect("test", verdict.Safe))
	first.Name = "first"
	next := smallCase(t, "redis-setnx-px-lua", 2*time.Second, verdict.Expect("test", verdict.Safe))
	next.Name = "next"
	var x *Session
	r := &Runner{HealthTimeout: 3 * time.Second, Progress: killAtFirstGrantOf("first", func() *cluster.Node { return x.s.servers.NodesOf(impls.Redis)[0] })}
	x, err := r.Open(context.Background(), Plan{Kind: "test", Cases: []Case{first}, ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close(context.Background(), nil)
	res, err := x.RunCase(context.Background(), first)
	if err != nil {
		t.Fatalf("the run ended on the servers' failure: %v", err)
	}
	if res.Run.Unrecovered == "" || res.Run.Acquired == 0 || !slices.Contains(res.Run.Observed, string(verdict.Unrecovered)) {
		t.Fatalf("first case: unrecovered %q, %d grants, observed %v; want the servers' failure recorded beside what it saw", res.Run.Unrecovered, res.Run.Acquired, res.Run.Observed)
	}
	if res.Verdict.Status != verdict.Agrees || !strings.Contains(res.Verdict.Text, "did not recover") {
		t.Errorf("first case: %s: %s; want safe as expected, saying the servers did not recover", res.Verdict.Status, res.Verdict.Text)
	}
	if x.s.servers != nil {
		t.Fatal("the servers that did not recover are still the session's")
	}
	res, err = x.RunCase(context.Background(), next)
	if err != nil {
		t.Fatalf("the case after: %v", err)
	}
	if res.Run.Unrecovered != "" || res.Run.Acquired == 0 || res.Verdict.Status != verdict.Agrees {
		t.Fatalf("the case after: unrecovered %q, %d grants, %s (%s); want it run on new servers", res.Run.Unrecovered, res.Run.Acquired, res.Verdict.Status, res.Verdict.Text)
	}
}

// Servers locklab did not start cannot be started anew: after a case
// whose servers did not recover, that case is recorded and judged, and the
// run ends with an infrastructure failure (exit 3) naming it, rather than
// run the cases still to come on them.
func TestUnrecoveredServersOfTheUsersEndTheRun(t *testing.T) {
	servers, cfg := ownServers(t, "", impls.Redis)
	first := smallCase(t, "redis-setnx-px-lua", 3*time.Second, verdict.Expectation{})
	first.Name = "first"
	next := smallCase(t, "redis-setnx-px-lua", 2*time.Second, verdict.Expectation{})
	next.Name = "next"
	p := Plan{Kind: "test", Cases: []Case{first, next}, ResultsDir: t.TempDir(), External: cfg}
	node := servers.NodesOf(impls.Redis)[0]
	out, err := (&Runner{HealthTimeout: 3 * time.Second, Progress: killAtFirstGrantOf("first", func() *cluster.Node { return node })}).Run(context.Background(), p)
	if !errors.Is(err, ErrInfra) || !strings.Contains(err.Error(), "first: servers did not recover") || !strings.Contains(err.Error(), "1 cases not run") {
		t.Fatalf("err = %v, want an infrastructure failure naming the case whose servers did not recover", err)
	}
	if out == nil || len(out.Results.Runs) != 1 || out.Results.Runs[0].Case != "first" || out.Results.Runs[0].Unrecovered == "" {
		t.Fatalf("outcome %+v: want the first case recorded, its servers unrecovered", out)
	}
}

// When one lane of a parallel run fails (a fault command that fails, here),
// the cases of the other lanes are cut short, and what they saw is not
// recorded as an observation: a case due to show a violation must not read
// as having missed it.
func TestLaneCutShortByAnotherLanesFailureIsNotRecorded(t *testing.T) {
	_, cfg := ownServers(t, "fault-commands:\n  redis:\n    pause: \"false\"\n    resume: \"true\"\n", impls.Redis, impls.ZooKeeper)
	failing := smallCase(t, "redis-setnx-px-lua", 3*time.Second, verdict.Expect("test", verdict.Safe))
	failing.Faults = []chaos.Step{step(t, "server-pause", chaos.Selector{Node: "redis-0"}, 500*time.Millisecond, 500*time.Millisecond, nil)}
	// A violation zk-sequential never shows: recorded, it would be a miss.
	cut := smallCase(t, "zk-sequential", 30*time.Second, verdict.Expect("test", verdict.DoubleGrant))
	p := Plan{Kind: "test", Cases: []Case{failing, cut}, ResultsDir: t.TempDir(), External: cfg}
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	out, err := (&Runner{Parallel: true, HealthTimeout: 2 * time.Second}).Run(context.Background(), p)
	if !errors.Is(err, ErrInfra) || !errors.Is(err, cluster.ErrFaultCommand) {
		t.Fatalf("err = %v, want the failed lane's infrastructure failure", err)
	}
	took := time.Since(start)
	if took > 25*time.Second+stalls.Within(start, start.Add(took)) {
		t.Fatalf("the run took %v: the other lane was not cut short", took)
	}
	t.Logf("the run took %v", took)
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
	servers, cfg := ownServers(t, "", impls.Redis, impls.ZooKeeper)
	c := smallCase(t, "zk-sequential", 2*time.Second, verdict.Expectation{})
	p := Plan{Kind: "test", Cases: []Case{c}, ResultsDir: t.TempDir(), External: cfg}
	out, err := (&Runner{HealthTimeout: 2 * time.Second, Progress: killAtFirstGrantOf(c.Name, func() *cluster.Node { return servers.NodesOf(impls.Redis)[0] })}).Run(context.Background(), p)
	if err != nil {
		t.Fatalf("a ZooKeeper case failed on a dead Redis node: %v", err)
	}
	if len(out.Results.Runs) != 1 || out.Results.Runs[0].Acquired == 0 {
		t.Fatalf("runs = %+v, want one ZooKeeper case with grants", out.Results.Runs)
	}
}

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

package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// BeliefFollowsHeartbeats checks what a session-based holder believes about
// its lock (ValidUntil): in the future and moving forward while it hears
// from the servers; frozen once it is cut off, and in the past by the time
// the servers have expired its session. With it, a holder that outlived
// its session is told apart from a lock service that broke mutual
// exclusion. The client is cut off through its own proxies only.
func BeliefFollowsHeartbeats(t *testing.T, c *cluster.Cluster, a impls.Approach, session time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const client = 9001
	ep, err := c.ClientEndpoints(client)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock.Skewable{}
	l, err := a.New(ctx, impls.Env{Endpoints: ep, Clock: clk, ClientID: client})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lease, err := l.Acquire(ctx, "belief-"+a.Name, impls.AcquireOptions{TTL: session})
	if err != nil {
		t.Fatal(err)
	}
	v0 := lease.ValidUntil()
	if v0.IsZero() || !v0.After(clk.Now()) {
		t.Fatalf("right after the grant the holder believes in %v (now %v): want a time in the future", v0, clk.Now())
	}
	time.Sleep(session)
	v1 := lease.ValidUntil()
	if !v1.After(v0) {
		t.Fatalf("after %v of heartbeats the belief did not move: %v then %v", session, v0, v1)
	}
	links, err := c.ClientLinks(client, c.NodesOf(a.Server))
	if err != nil {
		t.Fatal(err)
	}
	heal, err := chaos.InjectAll(ctx, &chaos.Partition{}, []chaos.Target{{Kind: chaos.TargetLink, Name: "holder", Links: links}})
	if err != nil {
		t.Fatal(err)
	}
	defer heal(context.Background())
	cut := clk.Now()
	time.Sleep(200 * time.Millisecond) // a reply already on its way may still land
	v2 := lease.ValidUntil()
	time.Sleep(session + session/2)
	v3 := lease.ValidUntil()
	if !v3.Equal(v2) {
		t.Fatalf("cut off, the belief still moved: %v then %v", v2, v3)
	}
	if v3.After(cut.Add(session + 500*time.Millisecond)) {
		t.Fatalf("cut off at %v, the holder believes in its lock until %v: more than a session past its last contact", cut, v3)
	}
	if !v3.Before(clk.Now()) {
		t.Fatalf("%v after being cut off the holder still believes its lock valid until %v", session+session/2, v3)
	}
}

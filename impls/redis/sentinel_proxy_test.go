package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/tcpproxy"
)

// Clients of the Sentinel topology reach the primary through its proxy,
// so a network fault there hits them; the Sentinels watch the primary at
// its own address, so the same fault does not make them fail over. Both
// halves matter: with the Sentinels behind the clients' proxies, the
// conformance suite's dropped replies set off failovers of their own, and
// without the routes a client would bypass every fault.
func TestSentinelClientsGoThroughProxiesSentinelsDoNot(t *testing.T) {
	ctx := context.Background()
	primary, err := testCluster.Leader(ctx, impls.RedisSentinel)
	if err != nil {
		t.Fatal(err)
	}
	l := newLocker(t, SentinelLuaApproach, 1)
	opt := impls.AcquireOptions{TTL: 5 * time.Second, Try: true}
	// Replies from the primary's proxy are dropped for 7 s: more than
	// twice Sentinel's down-after (3 s), time enough to elect and
	// promote had the Sentinels seen the silence.
	drop, err := primary.Proxy().Add(tcpproxy.Toxic{Kind: tcpproxy.Drop, Direction: tcpproxy.Downstream})
	if err != nil {
		t.Fatal(err)
	}
	heal := func() {
		if err := drop.Remove(ctx); err != nil {
			t.Fatal(err)
		}
	}
	defer heal()
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = l.Acquire(actx, "through-the-proxy", opt)
	cancel()
	if !errors.Is(err, impls.ErrIndeterminate) && !errors.Is(err, impls.ErrUnavailable) {
		t.Fatalf("acquire with the primary's replies dropped: err = %v, want indeterminate or unavailable (the client must dial the proxy)", err)
	}
	time.Sleep(7*time.Second - time.Since(start))
	heal()
	// Sentinel would have needed 3 s to call the primary down; give a
	// failover that started the time to show before asking.
	time.Sleep(2 * time.Second)
	// A promoted replica says so at once, whereas the old primary says
	// "leader" until Sentinel reaches it: ask every data node.
	for _, n := range testCluster.NodesOf(impls.RedisSentinel) {
		role, err := n.Role(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: cluster.RoleLeader, false: cluster.RoleFollower}[n == primary]; role != cluster.RoleSentinel && role != want {
			t.Fatalf("%s after the fault: role %q, want %q: the Sentinels saw the clients' fault and failed over", n.Name, role, want)
		}
	}
	if _, err := tryUntilAnswered(l, "after-the-fault", opt, 10*time.Second); err != nil {
		t.Fatalf("acquire after the heal: %v", err)
	}
}

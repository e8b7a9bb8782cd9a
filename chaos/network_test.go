package chaos

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/tcpproxy"
)

// quiet is how long a test waits to conclude that nothing arrives: long
// against loopback round trips (well under 1 ms), short for the suite.
const quiet = 300 * time.Millisecond

// TestPartition proves what each partition mode does to a connection open
// before it, to a command sent during it, and to a connection opened during
// it, on a real Redis behind its node proxy.
func TestPartition(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	for _, tc := range []struct {
		mode string
		// after the heal:
		replied      bool // the command sent during the partition gets its reply
		applied      bool // ... and the server applied it
		oldConnAlive bool // the connection opened before the partition still works
		newConnAlive bool // the connection opened during it works
	}{
		{mode: "", replied: true, applied: true, oldConnAlive: true, newConnAlive: true},
		{mode: "hold", replied: true, applied: true, oldConnAlive: true, newConnAlive: true},
		{mode: "reset", replied: false, applied: false, oldConnAlive: false, newConnAlive: false},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			key := randomKey("partition")
			direct := dialRedis(t, node.DirectAddr())
			old := dialRedis(t, node.Addr())
			if r := old.must("PING"); r != "+PONG" {
				t.Fatalf("PING = %q", r)
			}
			h := inject(t, &Partition{Mode: tc.mode}, NodeTarget(node))

			old.send("SET", key, "v")
			if r, err := old.reply(quiet); !errors.Is(err, errNoReply) {
				t.Fatalf("during the partition a reply came: %q %v", r, err)
			}
			fresh := dialRedis(t, node.Addr()) // accepted by the proxy, carries nothing
			fresh.send("PING")
			if r, err := fresh.reply(quiet); !errors.Is(err, errNoReply) {
				t.Fatalf("a connection opened during the partition got a reply: %q %v", r, err)
			}
			// Nothing reached the server: the SET is not applied.
			if r := direct.must("GET", key); r != "$-1" {
				t.Fatalf("during the partition the server applied the SET: GET = %q", r)
			}

			healed := time.Now()
			heal(t, h)
			r, err := old.reply(2 * time.Second)
			if got := err == nil && r == "+OK"; got != tc.replied {
				t.Fatalf("reply to the SET sent during the partition: %q %v; want a reply: %v", r, err, tc.replied)
			}
			if tc.replied {
				t.Logf("mode %q: the held SET's reply arrived %v after the heal", tc.mode, time.Since(healed))
			}
			want := "$-1"
			if tc.applied {
				want = "v"
			}
			if r := direct.must("GET", key); r != want {
				t.Fatalf("after the heal GET = %q, want %q", r, want)
			}
			if r, err := old.do(2*time.Second, "PING"); (err == nil && r == "+PONG") != tc.oldConnAlive {
				t.Fatalf("old connection after the heal: %q %v, want alive: %v", r, err, tc.oldConnAlive)
			}
			if r, err := fresh.reply(2 * time.Second); (err == nil && r == "+PONG") != tc.newConnAlive {
				t.Fatalf("connection opened during the partition, after the heal: %q %v, want alive: %v", r, err, tc.newConnAlive)
			}
			// Either way the link works again for new connections.
			if r := dialRedis(t, node.Addr()).must("PING"); r != "+PONG" {
				t.Fatalf("new connection after the heal: %q", r)
			}
		})
	}
}

// TestPartitionHoldsMuchData: a holding partition must not drop or reorder
// bytes when it holds far more than one chunk (here about 260 KB in 2000
// writes, many times the 16 KiB it hands on at once) and more follows at
// once: every command sent during it is applied, in order, after the heal,
// on the same connection, before those sent after.
func TestPartitionHoldsMuchData(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	key := randomKey("hold-many")
	value := strings.Repeat("x", 100)
	conn := dialRedis(t, node.Addr())
	conn.must("PING")
	h := inject(t, &Partition{}, NodeTarget(node))
	const n = 2000
	for i := 0; i < n; i++ {
		conn.send("RPUSH", key, value)
	}
	if r := dialRedis(t, node.DirectAddr()).must("LLEN", key); r != ":0" {
		t.Fatalf("during the partition LLEN = %q, want :0", r)
	}
	heal(t, h)
	// More right after the heal: bytes that follow the held ones while the
	// server is still reading them.
	const after = 200
	for i := 0; i < after; i++ {
		conn.send("RPUSH", key, value)
	}
	for i := 1; i <= n+after; i++ {
		r, err := conn.reply(5 * time.Second)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i, n+after, err)
		}
		if want := ":" + strconv.Itoa(i); r != want {
			t.Fatalf("reply %d = %q, want %q (bytes lost or reordered)", i, r, want)
		}
	}
}

// TestPartitionHealAfterServerClosed: when the server closes a connection
// during a holding partition, the heal is still prompt (a proxy that hands
// held chunks on one by one, each under its own timeout, took 15 s for 5
// held pings), and the client then gets the server's close after nothing
// else.
func TestPartitionHealAfterServerClosed(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	conn := dialRedis(t, node.Addr())
	conn.must("PING")
	h := inject(t, &Partition{}, NodeTarget(node))
	for i := 0; i < 5; i++ { // five separate writes: five chunks held
		conn.send("PING")
		time.Sleep(20 * time.Millisecond)
	}
	// The server drops every client connection but this one, as a ZooKeeper
	// server closes the connection of a session it expired.
	if r := dialRedis(t, node.DirectAddr()).must("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"); r != ":1" {
		t.Fatalf("CLIENT KILL = %q, want :1 (the proxied connection)", r)
	}
	time.Sleep(100 * time.Millisecond)
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	heal(t, h)
	if took := time.Since(start); took > time.Second+stalls.Within(start, start.Add(took)) {
		t.Fatalf("heal took %v", took)
	}
	if r, err := conn.reply(2 * time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after the heal: %q %v, want the server's close (EOF)", r, err)
	}
}

// TestClientPartitionLeavesOthersAlone: cutting client 1's own link to one
// node leaves client 1's link to the other node, client 2's links and the
// shared proxy untouched.
func TestClientPartitionLeavesOthersAlone(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 2}})
	cut := c.Nodes()[0]
	e1, err := c.ClientEndpoints(1)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := c.ClientEndpoints(2)
	if err != nil {
		t.Fatal(err)
	}
	if e1[impls.Redis].Addrs[0] == e2[impls.Redis].Addrs[0] || e1[impls.Redis].Addrs[0] == cut.Addr() {
		t.Fatalf("clients share a proxy: client 1 %v, client 2 %v, node %s", e1[impls.Redis].Addrs, e2[impls.Redis].Addrs, cut.Addr())
	}
	if again, _ := c.ClientEndpoints(1); again[impls.Redis].Addrs[0] != e1[impls.Redis].Addrs[0] {
		t.Fatalf("ClientEndpoints(1) made new proxies: %v then %v", e1[impls.Redis].Addrs, again[impls.Redis].Addrs)
	}
	c1cut, c1other := dialRedis(t, e1[impls.Redis].Addrs[0]), dialRedis(t, e1[impls.Redis].Addrs[1])
	c2cut, shared := dialRedis(t, e2[impls.Redis].Addrs[0]), dialRedis(t, cut.Addr())
	// Each link's round trip before the cut: after it, an untouched link
	// answers as it did then (a loaded machine slows both alike).
	before := map[*redisConn]time.Duration{}
	for _, conn := range []*redisConn{c1cut, c1other, c2cut, shared} {
		start := time.Now()
		conn.must("PING")
		before[conn] = time.Since(start)
	}
	links, err := c.ClientLinks(1, []*cluster.Node{cut})
	if err != nil {
		t.Fatal(err)
	}
	target := LinkTarget("client 1", []*cluster.Node{cut}, links)
	if target.Name != "client 1 -> "+cut.Name {
		t.Errorf("target name %q", target.Name)
	}
	h := inject(t, &Partition{}, target)
	if r, err := c1cut.do(quiet, "PING"); !errors.Is(err, errNoReply) {
		t.Fatalf("client 1 reached the node it is cut from: %q %v", r, err)
	}
	for name, conn := range map[string]*redisConn{"client 1 to the other node": c1other,
		"client 2 to the cut node": c2cut, "the shared proxy": shared} {
		start := time.Now()
		if r, err := conn.do(quiet, "PING"); err != nil || r != "+PONG" {
			t.Fatalf("%s: %q %v, want PONG", name, r, err)
		}
		if d := time.Since(start); d > 100*time.Millisecond+3*before[conn] {
			t.Errorf("%s: PING took %v, %v before the cut", name, d, before[conn])
		}
	}
	heal(t, h)
	if r, err := c1cut.reply(2 * time.Second); err != nil || r != "+PONG" {
		t.Fatalf("client 1 after the heal: %q %v", r, err)
	}
}

// TestDropReplies: the server applies a command whose reply never arrives;
// the heal then closes the connection (a stream with a hole in it).
func TestDropReplies(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	key := randomKey("drop")
	conn := dialRedis(t, node.Addr())
	conn.must("PING")
	h := inject(t, &DropReplies{}, NodeTarget(node))
	if r, err := conn.do(quiet, "SET", key, "v"); !errors.Is(err, errNoReply) {
		t.Fatalf("the reply arrived: %q %v", r, err)
	}
	if r := dialRedis(t, node.DirectAddr()).must("GET", key); r != "v" {
		t.Fatalf("the SET whose reply was dropped was not applied: GET = %q", r)
	}
	heal(t, h)
	if r, err := conn.do(2*time.Second, "PING"); err == nil {
		t.Fatalf("the connection survived the heal of dropped replies: %q", r)
	}
	if r := dialRedis(t, node.Addr()).must("PING"); r != "+PONG" {
		t.Fatalf("new connection after the heal: %q", r)
	}
}

// TestSlowReplies: the command is applied at once, its reply takes at least
// the latency, and after the heal replies are fast again.
func TestSlowReplies(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	key := randomKey("slow")
	conn := dialRedis(t, node.Addr())
	direct := dialRedis(t, node.DirectAddr())
	conn.must("PING")
	const latency = 400 * time.Millisecond
	h := inject(t, &SlowReplies{Latency: Duration(latency)}, NodeTarget(node))
	start := time.Now()
	conn.send("SET", key, "v")
	time.Sleep(50 * time.Millisecond)
	if r := direct.must("GET", key); r != "v" {
		t.Fatalf("the request was delayed too: GET = %q after 50ms", r)
	}
	if r, err := conn.reply(2 * time.Second); err != nil || r != "+OK" {
		t.Fatalf("reply: %q %v", r, err)
	}
	if took := time.Since(start); took < latency {
		t.Fatalf("reply after %v, want at least %v", took, latency)
	}
	heal(t, h)
	stalls := stall.NewWatch(t.Context())
	start = time.Now()
	conn.must("PING")
	if took := time.Since(start); took > latency/2+stalls.Within(start, start.Add(took)) {
		t.Fatalf("after the heal PING took %v", took)
	}
}

// TestSlowRepliesHealAfterClientReset: a client resets its connection while
// its replies are delayed, and the heal comes before they are due: the
// proxy's first write of a reply fails. The heal must return within one
// flush wait (a heal that waited for each delayed reply's hand-off took 5 s
// a reply, and for ever when the writer had gone: a full matrix hung on
// one), and the proxy must go on serving.
func TestSlowRepliesHealAfterClientReset(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	conn := dialRedis(t, node.Addr())
	conn.must("PING")
	const latency = 2 * time.Second
	h := inject(t, &SlowReplies{Latency: Duration(latency)}, NodeTarget(node))
	for i := 0; i < 5; i++ { // five separate replies: five delayed chunks
		conn.send("PING")
		time.Sleep(20 * time.Millisecond)
	}
	if err := conn.conn.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	conn.conn.Close() // a reset: the proxy's first write to it fails
	time.Sleep(100 * time.Millisecond)
	stalls := stall.NewWatch(t.Context())
	healed := make(chan error, 1)
	start := time.Now()
	go func() { healed <- h(context.Background()) }()
	select {
	case err := <-healed:
		if err != nil {
			t.Fatalf("heal: %v", err)
		}
		if took := time.Since(start); took > tcpproxy.FlushWait+2*time.Second+stalls.Within(start, start.Add(took)) {
			t.Fatalf("heal took %v, want at most the flush wait (%v)", took, tcpproxy.FlushWait)
		}
	case <-time.After(8 * tcpproxy.FlushWait):
		t.Fatalf("heal did not return in %v", 8*tcpproxy.FlushWait)
	}
	fresh := dialRedis(t, node.Addr())
	start = time.Now()
	fresh.must("PING")
	if took := time.Since(start); took > latency/4+stalls.Within(start, start.Add(took)) {
		t.Fatalf("after the heal PING took %v", took)
	}
}

// TestOverlappingInjections: two injections of one kind on one proxy own
// their toxics: healing the first leaves the second in place.
func TestOverlappingInjections(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	conn := dialRedis(t, node.Addr())
	conn.must("PING")
	first := inject(t, &Partition{}, NodeTarget(node))
	second := inject(t, &Partition{}, NodeTarget(node))
	heal(t, first)
	if r, err := conn.do(quiet, "PING"); !errors.Is(err, errNoReply) {
		t.Fatalf("healing one of two partitions healed both: %q %v", r, err)
	}
	heal(t, second)
	if r, err := conn.reply(2 * time.Second); err != nil || r != "+PONG" {
		t.Fatalf("after both heals: %q %v", r, err)
	}
	if err := first(context.Background()); err != nil {
		t.Fatalf("a second heal of one injection: %v", err)
	}
}

package cluster

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/internal/procstat"
)

// redisDo sends one inline command and returns the first reply line
// (":-2", "+OK", "$-1" ...), or the bulk string that follows "$n" (all n
// bytes: an INFO section's many lines too).
func redisDo(t *testing.T, addr, cmd string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	head = strings.TrimSpace(head)
	if strings.HasPrefix(head, "$") && head != "$-1" {
		n, err := strconv.Atoi(head[1:])
		if err != nil {
			t.Fatalf("%s: reply %q", cmd, head)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return strings.TrimSpace(string(body))
	}
	return head
}

// awaitSnapshot waits until the node's last snapshot holds every change
// ("save 1 1" writes one a second or so after a change; beside two busy
// loops the fork and write took longer than the 2.5 s once waited).
func awaitSnapshot(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info := strings.Split(redisDo(t, addr, "INFO persistence"), "\r\n")
		if slices.Contains(info, "rdb_changes_since_last_save:0") && slices.Contains(info, "rdb_bgsave_in_progress:0") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot of the changes within 30 s:\n%s", strings.Join(info, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A clock jump on a Redis node under libfaketime expires its keys at once;
// the node keeps running and keeps its other data; the jump is its own
// (another node's keys live on). Embedded and in containers (libfaketime
// from the image, its offset file mounted from the host).
func TestRedisServerClockJumpExpiresKeys(t *testing.T) {
	for _, mode := range []struct {
		name  string
		start func(context.Context, LocalConfig) (*Cluster, error)
	}{
		{"local", StartLocal},
		{"docker", func(ctx context.Context, cfg LocalConfig) (*Cluster, error) {
			return StartDocker(ctx, DockerConfig{LocalConfig: cfg, Images: LocalImages(), Connect: docker.Connect})
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := mode.start(ctx, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 2}, FakeTime: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			redisClockJump(t, c.NodesOf(impls.Redis)[0], c.NodesOf(impls.Redis)[1])
		})
	}
}

// redisClockJump jumps a's clock 40 s and back, b's not at all.
func redisClockJump(t *testing.T, a, b *Node) {
	t.Helper()
	for _, n := range []*Node{a, b} {
		if got := redisDo(t, n.Addr(), "SET lock me NX PX 30000"); got != "+OK" {
			t.Fatalf("%s: SET: %s", n.Name, got)
		}
		redisDo(t, n.Addr(), "SET plain v")
	}
	if err := a.SetClockOffset(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := redisDo(t, a.Addr(), "PTTL lock"); got != ":-2" {
		t.Errorf("%s after a 40 s jump: PTTL lock = %s, want :-2 (expired)", a.Name, got)
	}
	if got := redisDo(t, a.Addr(), "GET plain"); got != "v" {
		t.Errorf("%s lost a key without expiry: GET plain = %q", a.Name, got)
	}
	if got := redisDo(t, b.Addr(), "PTTL lock"); !longTTL(got) {
		t.Errorf("%s (not jumped): PTTL lock = %s, want about 30000", b.Name, got)
	}
	if d, err := a.ClockOffset(); err != nil || d != 40*time.Second {
		t.Errorf("ClockOffset = %v, %v", d, err)
	}
	// Back to the real time: a new lock lives its full TTL again.
	if err := a.SetClockOffset(0); err != nil {
		t.Fatal(err)
	}
	redisDo(t, a.Addr(), "SET lock2 me NX PX 30000")
	if got := redisDo(t, a.Addr(), "PTTL lock2"); !longTTL(got) {
		t.Errorf("after the heal: PTTL lock2 = %s, want about 30000", got)
	}
}

// longTTL: a PTTL reply of more than 20 s.
func longTTL(reply string) bool {
	ms, err := strconv.Atoi(strings.TrimPrefix(reply, ":"))
	return err == nil && ms > 20000
}

// Without FakeTime a node says why its clock cannot move.
func TestSetClockOffsetRefusedWithoutFakeTime(t *testing.T) {
	c, err := StartLocal(context.Background(), LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Nodes()[0].SetClockOffset(time.Second)
	if !errors.Is(err, ErrNoFakeTime) || !strings.Contains(err.Error(), "FakeTime") {
		t.Fatalf("SetClockOffset without faketime: %v", err)
	}
	etcd := &Node{Name: "etcd-1", Server: impls.Etcd, proc: &process{}}
	if err := etcd.CanSetClock(); !errors.Is(err, ErrNoFakeTime) || !strings.Contains(err.Error(), "vDSO") {
		t.Fatalf("etcd: %v", err)
	}
}

// What a lock key survives of a SIGKILL and restart, by persistence mode.
func TestRedisPersistenceModes(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		snapshot bool // kill once a snapshot holds the SET
		keeps    bool
	}{
		{RedisPersistNone, false, false},
		{RedisPersistAOFEverysec, false, true}, // written before the reply; the kernel keeps it
		{RedisPersistAOFAlways, false, true},
		{RedisPersistRDB, true, true}, // after a snapshot ("save 1 1")
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx := context.Background()
			c, err := StartLocal(ctx, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}, Settings: persisting(t, tc.mode)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n := c.Nodes()[0]
			if got := redisDo(t, n.Addr(), "SET lock me NX PX 60000"); got != "+OK" {
				t.Fatalf("SET: %s", got)
			}
			if tc.snapshot {
				awaitSnapshot(t, n.Addr())
			}
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			got := redisDo(t, n.Addr(), "GET lock")
			if kept := got == "me"; kept != tc.keeps {
				t.Fatalf("after kill and restart with %s: GET lock = %q, want kept=%v", tc.mode, got, tc.keeps)
			}
		})
	}
}

// A ZooKeeper ensemble under libfaketime idles as without it, and a member
// whose clock jumps an hour keeps serving. With libfaketime's "monotonic
// fix" on, the JVM's timed waits spun: the idle ensemble used 2 cores (0.03
// without libfaketime), starving every other server of a matrix run.
func TestZooKeeperUnderFakeTimeIdles(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	ctx := context.Background()
	c, err := StartLocal(ctx, LocalConfig{Nodes: map[impls.Server]int{impls.ZooKeeper: 3}, FakeTime: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Nodes()[0].SetClockOffset(time.Hour); err != nil {
		t.Fatal(err)
	}
	used := func() time.Duration {
		var d time.Duration
		for _, n := range c.Nodes() {
			st, err := procstat.Read(n.Pid())
			if err != nil {
				t.Fatalf("%s: %v", n.Name, err)
			}
			d += st.CPU
		}
		return d
	}
	const window = 3 * time.Second
	before := used()
	time.Sleep(window)
	if cores := float64(used()-before) / float64(window); cores > 0.3 {
		t.Fatalf("the idle ensemble used %.2f cores, want well under 0.3", cores)
	}
	for _, n := range c.Nodes() {
		if r, err := ZKFourLetter(ctx, n.DirectAddr(), "ruok"); err != nil || r != "imok" {
			t.Fatalf("%s after the jump: %q %v", n.Name, r, err)
		}
	}
}

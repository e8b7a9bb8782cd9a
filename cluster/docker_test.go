package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	testcontainers "github.com/testcontainers/testcontainers-go"

	"github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
)

// startDockerForTest starts a Docker cluster from the local images
// (scripts/images.sh, which `make test` runs first).
func startDockerForTest(t *testing.T, cfg LocalConfig) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := StartDocker(ctx, DockerConfig{LocalConfig: cfg, Images: LocalImages(), Connect: docker.Connect})
	if err != nil {
		t.Fatalf("start the Docker cluster (are the images built? scripts/images.sh): %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newDockerClient is a client of the engine the tests' clusters run on,
// for what a test reads of their containers beyond what cluster asks.
func newDockerClient(t *testing.T) *testcontainers.DockerClient {
	t.Helper()
	cli, err := testcontainers.NewDockerClientWithOpts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// sessionContainers lists the containers of a Docker session, running or not.
func sessionContainers(t *testing.T, session string) []string {
	t.Helper()
	cli := newDockerClient(t)
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", labelSession+"="+session)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		names = append(names, strings.Join(c.Names, ","))
	}
	return names
}

// The Docker cluster is the embedded one's topology in containers: every
// server answers at its published 127.0.0.1 port and through its proxy;
// Pause freezes the whole container until Resume; Kill leaves nothing
// running and nothing answering; Restart works three times in a row on the
// same address, keeping the data a server persisted; Close leaves no
// container behind. For every server kind.
func TestDockerClusterTakesServerFaults(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	c := startDockerForTest(t, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1, impls.MySQL: 1, impls.ZooKeeper: 3, impls.Postgres: 1, impls.Etcd: 3}})
	ctx := context.Background()
	session := c.docker.id
	if got := len(sessionContainers(t, session)); got != 9 {
		t.Fatalf("%d containers in the session, want 9", got)
	}
	for _, kind := range []impls.Server{impls.Redis, impls.MySQL, impls.ZooKeeper, impls.Postgres, impls.Etcd} {
		t.Run(string(kind), func(t *testing.T) {
			n := c.NodesOf(kind)[0]
			if !strings.HasPrefix(n.DirectAddr(), "127.0.0.1:") || !strings.HasPrefix(n.Addr(), "127.0.0.1:") {
				t.Fatalf("addresses %s / %s are not on 127.0.0.1", n.DirectAddr(), n.Addr())
			}
			if v := c.Versions[kind]; !strings.Contains(v, "(image "+LocalImages()[kind]+")") {
				t.Errorf("version %q does not name the image %s", v, LocalImages()[kind])
			}
			answers := pauseAndResume(t, n)
			direct := n.DirectAddr()
			for i := 1; i <= 3; i++ {
				if err := n.Kill(); err != nil {
					t.Fatal(err)
				}
				if running, _, err := n.ctr.state(ctx); err != nil || running {
					t.Fatalf("kill %d: container still running (err %v)", i, err)
				}
				if err := answers(); err == nil {
					t.Fatalf("kill %d: a killed server answered", i)
				}
				// Stopped, the container's published port is free at the
				// engine: held, no other program can take it before the
				// restart.
				if held := n.ctr.held.ports(); len(held) != 1 || held[0] != n.ctr.hostPort {
					t.Fatalf("kill %d: ports held %v, want the published %d", i, held, n.ctr.hostPort)
				}
				checkPortHeld(t, n.ctr.hostPort)
				rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
				err := n.Restart(rctx)
				cancel()
				if err != nil {
					t.Fatalf("restart %d: %v", i, err)
				}
				if n.DirectAddr() != direct {
					t.Fatalf("restart %d moved the server from %s to %s", i, direct, n.DirectAddr())
				}
			}
		})
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := sessionContainers(t, session); len(left) > 0 {
		t.Fatalf("containers left after Close: %v", left)
	}
}

// A Redis node without persistence loses its keys when its container is
// killed and started again (the fault server-restart relies on it), and
// keeps them with AOF always.
func TestDockerRedisRestartLosesKeysUnlessPersisted(t *testing.T) {
	for _, tc := range []struct {
		mode string
		kept bool
	}{{RedisPersistNone, false}, {RedisPersistAOFAlways, true}} {
		t.Run(tc.mode, func(t *testing.T) {
			c := startDockerForTest(t, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}, Settings: persisting(t, tc.mode)})
			ctx := context.Background()
			n := c.NodesOf(impls.Redis)[0]
			if out, err := redisCommand(ctx, n.DirectAddr(), "SET lock holder-1"); err != nil || out != "OK" {
				t.Fatalf("SET: %q %v", out, err)
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			out, err := redisCommand(ctx, n.DirectAddr(), "EXISTS lock")
			if err != nil {
				t.Fatal(err)
			}
			if kept := out == "1"; kept != tc.kept {
				t.Fatalf("after a restart with persistence %s the key exists: %v, want %v", tc.mode, kept, tc.kept)
			}
		})
	}
}

// A locklab killed with SIGKILL cannot run Close: its guard removes the
// containers and the network all the same.
func TestDockerContainersGoWhenLocklabIsKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LOCKLAB_DOCKER_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	session := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "session "); ok {
				session <- id
			}
		}
		close(session)
	}()
	var id string
	select {
	case id = <-session:
	case <-time.After(3 * time.Minute):
		t.Fatal("the helper did not start its cluster")
	}
	if id == "" {
		t.Fatal("the helper ended without starting its cluster")
	}
	if got := len(sessionContainers(t, id)); got != 2 {
		t.Fatalf("helper's session has %d containers, want 2", got)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := sessionContainers(t, id)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after locklab was killed, its containers are still there: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMain lets the test binary be the locklab that gets killed (run by
// TestDockerContainersGoWhenLocklabIsKilled, in a process of its own): it
// starts a cluster, says its session and waits to die.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKLAB_DOCKER_HELPER") != "1" {
		os.Exit(m.Run())
	}
	c, err := StartDocker(context.Background(), DockerConfig{LocalConfig: LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 2}}, Images: LocalImages(), Connect: docker.Connect})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("session", c.docker.id)
	time.Sleep(10 * time.Minute)
}

// A ZooKeeper leader cut off its network (server-isolate) is a real
// partition: the other two members elect a new leader while it is away, its
// clients cannot reach it, and once it rejoins it serves again, as a
// follower. The proxies cannot do this: members talk to each other directly.
func TestDockerIsolatedZooKeeperLeaderIsReplaced(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	c := startDockerForTest(t, LocalConfig{Nodes: map[impls.Server]int{impls.ZooKeeper: 3}})
	ctx := context.Background()
	var leader *Node
	for _, n := range c.NodesOf(impls.ZooKeeper) {
		if role, err := n.Role(ctx); err == nil && role == "leader" {
			leader = n
		}
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	const isolatedFor = 15 * time.Second
	isolated := time.Now()
	if err := leader.Isolate(); err != nil {
		t.Fatal(err)
	}
	hctx, cancel := context.WithTimeout(ctx, time.Second)
	err := leader.health(hctx)
	cancel()
	if err == nil {
		t.Fatal("an isolated member still answers its clients")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var newLeader string
		for _, n := range c.NodesOf(impls.ZooKeeper) {
			if n == leader {
				continue
			}
			if role, err := n.Role(ctx); err == nil && role == "leader" {
				newLeader = n.Name
			}
		}
		if newLeader != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after %s was isolated, no other member leads", leader.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Away long enough for the backoffs to grow past 10 s (the kernel's
	// retransmissions on its dead peer connections, ZooKeeper's election
	// rounds, both doubling from 200 ms): without zooKeeperSysctls and
	// the capped rounds it served again 11.6-12.9 s after its return.
	if away := isolatedFor - time.Since(isolated); away > 0 {
		time.Sleep(away)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	stalls := stall.NewWatch(rctx)
	rejoined := time.Now()
	if err := leader.Rejoin(rctx); err != nil {
		t.Fatal(err)
	}
	// Backed-off retries served again after 11.6 s or more; a prompt
	// rejoin within 8 s, and however long this machine stood still (this
	// process's own stalls tell of it).
	if took := time.Since(rejoined); took > 8*time.Second+stalls.Within(rejoined, rejoined.Add(took)) {
		t.Fatalf("the old leader served again %v after it rejoined (away %v): its election retries backed off", took.Round(time.Millisecond), isolatedFor)
	}
	// Its role is asked until it answers (a starved container left one
	// srvr unanswered with two busy loops beside the suite), 10 s at most.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		role, err := leader.Role(ctx)
		if err == nil && role == "follower" {
			return
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("the old leader after rejoining: role %q, %v; want follower", role, err)
		}
	}
}

// Members keep their network addresses: two isolated at once that rejoin
// in the other order, and two killed that start again in the other order,
// each come back at the address their peers know. Left to Docker, the
// first back would get the lowest free address, the other's.
func TestDockerMembersKeepTheirAddresses(t *testing.T) {
	c := startDockerForTest(t, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 2}})
	ctx := context.Background()
	nodes := append([]*Node(nil), c.NodesOf(impls.Redis)...)
	addressOf := func(n *Node) string {
		t.Helper()
		res, err := newDockerClient(t).ContainerInspect(ctx, n.ctr.id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ep := res.Container.NetworkSettings.Networks[n.ctr.network]
		if ep == nil {
			t.Fatalf("%s is not on the network", n.Name)
		}
		return ep.IPAddress.String()
	}
	// Lowest address first: the members come back highest first, each
	// to where Docker would otherwise put the other.
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ctr.ip.Less(nodes[j].ctr.ip) })
	want := []string{addressOf(nodes[0]), addressOf(nodes[1])}
	if want[0] == want[1] {
		t.Fatalf("both members at %s", want[0])
	}
	check := func(after string) {
		t.Helper()
		for i, n := range nodes {
			if got := addressOf(n); got != want[i] {
				t.Fatalf("after %s: %s at %s, was at %s", after, n.Name, got, want[i])
			}
		}
	}
	for _, n := range nodes {
		if err := n.Isolate(); err != nil {
			t.Fatal(err)
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if err := nodes[i].Rejoin(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check("isolate and rejoin in the other order")
	for _, n := range nodes {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := nodes[i].Restart(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	check("kill and restart in the other order")
}

// A container that exits while starting is started again from the image
// (MariaDB's install failed once so on a loaded machine): here a Redis
// container that exits on its first start only, which it remembers in the
// host directory mounted into it.
func TestDockerContainerThatExitsOnStartIsStartedAgain(t *testing.T) {
	c := startDockerForTest(t, LocalConfig{FakeTime: true})
	script := `f=` + containerClockDir + `/started
if [ ! -e "$f" ]; then touch "$f"; echo first start fails; exit 1; fi
exec redis-server --port 6379 --bind 0.0.0.0 --protected-mode no`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := c.startContainer(ctx, containerSpec{name: "flaky", server: impls.Redis, port: redisPort,
		fakeTime: true, tcmalloc: true, entrypoint: []string{"sh", "-c", script}})
	if n != nil {
		c.nodes = append(c.nodes, n)
	}
	if err != nil {
		t.Fatalf("not started again: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "flaky", "started")); err != nil {
		t.Fatalf("the first start did not run: %v", err)
	}
	if names := sessionContainers(t, c.docker.id); len(names) != 1 {
		t.Fatalf("containers of the session: %v, want the second one only", names)
	}
}

// RunProbe runs a program of this machine in a container beside the
// servers and hands over what it prints once it said it runs; a program
// that never says so is an error, with what it said; the probe's container
// goes with the cluster.
func TestDockerRunProbe(t *testing.T) {
	c := startDockerForTest(t, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RunProbe(t.Context(), []string{sh, "-c", "echo cannot run >&2; exit 1"}, func(io.Reader) {}); err == nil ||
		!strings.Contains(err.Error(), "cannot run") {
		t.Errorf("a probe that never says it runs: %v, want an error with what it said", err)
	}
	lines := make(chan string, 4)
	err = c.RunProbe(t.Context(), []string{sh, "-c", "echo running; echo stall one; sleep 600"}, func(r io.Reader) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lines:
		if l != "stall one" {
			t.Errorf("the probe's reader got %q first, want its second line", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing the probe printed reached its reader")
	}
	if n := len(sessionContainers(t, c.docker.id)); n != 2 {
		t.Errorf("%d containers in the session, want the server and the probe that runs", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := sessionContainers(t, c.docker.id); len(left) != 0 {
		t.Errorf("after Close: %v", left)
	}
	select {
	case <-lines: // the reader saw the end of the probe's output
	case <-time.After(10 * time.Second):
		t.Error("the probe's reader did not end with its container")
	}
}

func TestAlreadyExited(t *testing.T) {
	for _, tt := range []struct {
		msg  string
		want bool
	}{
		{"Error response from daemon: cannot kill container: abc: container abc is not running", true},
		{"Error response from daemon: Cannot kill container: 91c1: container 91c1 PID 20875 is zombie and can not be killed. Use the --init option", true},
		{"Error response from daemon: No such container: abc", false},
		{"context deadline exceeded", false},
	} {
		if got := alreadyExited(errors.New(tt.msg)); got != tt.want {
			t.Errorf("alreadyExited(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

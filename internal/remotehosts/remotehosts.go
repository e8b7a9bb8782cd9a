// Package remotehosts gives tests stand-ins for other hosts without
// leaving this machine: servers in containers on a Docker network the test
// creates (their addresses are not loopback, as other hosts' are not, and
// they are the test's own: the one place a test may send traffic outside
// 127.0.0.0/8), and this machine's Docker engine reached over TCP on
// 127.0.0.1, as an engine elsewhere is reached. Everything goes at the
// test's end, also when it fails; what a test process killed outright
// leaves is labelled with its pid, and the next New removes it.
package remotehosts

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// labelOwner marks what a test made with its process id.
const labelOwner = "locklab.remotehosts.owner"

// Network is a Docker network of the test's own, with a subnet Docker
// chose, so containers on it keep their address across a restart.
type Network struct {
	Name   string
	subnet netip.Prefix
	next   netip.Addr
}

// Server is one server container on a Network.
type Server struct {
	Node      string // the name locklab gives it (redis-0, ...)
	Container string // its container's name
	Addr      string // host:port on the network
}

// New creates a network for t, removed (with its containers) when t ends.
func New(t testing.TB) *Network {
	t.Helper()
	removeOrphans(t)
	name := fmt.Sprintf("llremote-%d-%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	// Docker picks a subnet free of the host's routes for a first network;
	// the real one takes that subnet explicitly, which fixed container
	// addresses need.
	docker(t, "network", "create", "--label", ownerLabel(), name)
	subnet := strings.TrimSpace(docker(t, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", name))
	gateway := strings.TrimSpace(docker(t, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", name))
	docker(t, "network", "rm", name)
	prefix, err := netip.ParsePrefix(strings.Fields(subnet)[0])
	if err != nil {
		t.Fatalf("docker network %s: subnet %q: %v", name, subnet, err)
	}
	docker(t, "network", "create", "--label", ownerLabel(), "--subnet", prefix.String(), "--gateway", strings.Fields(gateway)[0], name)
	n := &Network{Name: name, subnet: prefix.Masked(), next: prefix.Masked().Addr().Next().Next().Next()}
	t.Cleanup(func() { n.remove(t) })
	return n
}

func ownerLabel() string { return labelOwner + "=" + strconv.Itoa(os.Getpid()) }

// ClockFile is where each server's clock offset is, in its container: the
// servers run under libfaketime (the local image has it), so a fault
// command that writes an offset there moves that server's clock.
const ClockFile = "/locklab-clock/faketime.rc"

// Redis starts count Redis servers without persistence (a restart loses
// every key) from the local image, under libfaketime (ClockFile), named as
// locklab names an external config's Redis nodes, and waits until each
// answers.
func (n *Network) Redis(t testing.TB, count int) []Server {
	t.Helper()
	var out []Server
	for i := range count {
		ip := n.next
		n.next = n.next.Next()
		s := Server{Node: fmt.Sprintf("redis-%d", i), Addr: net.JoinHostPort(ip.String(), "6379")}
		s.Container = n.Name + "-" + s.Node
		// Debian's redis-server needs tcmalloc before libfaketime
		// (docs/facts.md); the offset stays across a restart.
		docker(t, "run", "-d", "--name", s.Container, "--network", n.Name, "--ip", ip.String(), "--label", ownerLabel(),
			"-e", "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
			"-e", "FAKETIME_TIMESTAMP_FILE="+ClockFile, "-e", "FAKETIME_NO_CACHE=1", "-e", "FAKETIME_DONT_FAKE_MONOTONIC=1",
			"--entrypoint", "sh", "locklab/redis:bookworm", "-c",
			"mkdir -p "+path.Dir(ClockFile)+" && { [ -e "+ClockFile+" ] || echo +0 > "+ClockFile+"; } && exec redis-server "+
				"--port 6379 --bind 0.0.0.0 --protected-mode no --save '' --appendonly no")
		out = append(out, s)
	}
	for _, s := range out {
		waitRedis(t, s.Addr)
	}
	return out
}

// waitRedis waits until the Redis at a answers PING.
func waitRedis(t testing.TB, a string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", a, time.Second)
		if err == nil {
			conn.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprint(conn, "PING\r\n")
			line, rerr := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			if rerr == nil && strings.HasPrefix(line, "+PONG") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis at %s did not answer within 30 s", a)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// remove removes the network's containers and the network.
func (n *Network) remove(t testing.TB) {
	if ids := strings.Fields(dockerOut("ps", "-aq", "--filter", "network="+n.Name)); len(ids) > 0 {
		dockerOut(append([]string{"rm", "-f", "-v"}, ids...)...)
	}
	if out, err := exec.Command("docker", "network", "rm", n.Name).CombinedOutput(); err != nil {
		t.Errorf("docker network rm %s: %v: %s", n.Name, err, out)
	}
}

// removeOrphans removes what a test process that is gone left behind.
func removeOrphans(t testing.TB) {
	for _, kind := range []string{"container", "network"} {
		list := "ps"
		args := []string{"-a"}
		if kind == "network" {
			list, args = "network", []string{"ls"}
		}
		out := dockerOut(append(append([]string{list}, args...), "--filter", "label="+labelOwner, "--format", "{{.ID}} {{.Label \""+labelOwner+"\"}}")...)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 {
				continue
			}
			if pid, err := strconv.Atoi(f[1]); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
				if kind == "container" {
					dockerOut("rm", "-f", "-v", f[0])
				} else {
					dockerOut("network", "rm", f[0])
				}
			}
		}
	}
}

// EngineOverTCP exposes this machine's Docker engine on a port of
// 127.0.0.1 through socat (the engine's own configuration is left as it
// is) and returns its address in DOCKER_HOST's form; socat is stopped when
// t ends.
func EngineOverTCP(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("socat"); err != nil {
		t.Fatal("socat is not installed: run scripts/deps.sh")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("socat", fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr", port), "UNIX-CONNECT:/var/run/docker.sock")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // socat and its forks
		cmd.Wait()
	})
	host := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := exec.Command("docker", "version", "--format", "{{.Server.Version}}")
		c.Env = append(os.Environ(), "DOCKER_HOST="+host)
		if err := c.Run(); err == nil {
			return host
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Docker engine does not answer at %s", host)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// docker runs the docker command for t; a failure ends the test.
func docker(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dockerOut runs the docker command; what fails is left to the caller's
// checks (cleanup goes on).
func dockerOut(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", args...).Output()
	return string(out)
}

// Package cluster owns server lifecycles: Local starts the real binaries on
// 127.0.0.1 (the default), External uses servers the user runs. Either way
// every node sits behind an in-process proxy (tcpproxy) that clients always
// connect through, so chaos can drop replies, add latency or cut links.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
	"github.com/locklab/locklab/tcpproxy"
)

// ErrUnsupported: the node cannot do this (e.g. pausing an external server).
var ErrUnsupported = errors.New("not supported by this node")

// Node is one server. Clients reach it at Addr (the proxy).
type Node struct {
	Name   string
	Server impls.Server
	direct string
	proxy  *tcpproxy.Proxy
	proc   *process         // a server locklab runs on this machine
	ctr    *dockerContainer // a server locklab runs as a container
	cmds   *nodeCommands    // the user's server, with the user's fault commands
	health func(ctx context.Context) error
	// clockMu makes ShiftClock's read-modify-write of the offset one step.
	clockMu sync.Mutex
}

// String is the node's name (chaos.Node).
func (n *Node) String() string { return n.Name }

// Addr is the address clients use: the proxy in front of the node.
func (n *Node) Addr() string { return n.proxy.Listen }

// DirectAddr is the server's own address, bypassing the proxy.
func (n *Node) DirectAddr() string { return n.direct }

// Proxy is the fault-injecting proxy in front of the node.
func (n *Node) Proxy() *tcpproxy.Proxy { return n.proxy }

// Controllable says whether locklab can act on the server: it runs it, so
// it can pause, kill and restart it, or the user gave fault commands for
// it (CanPause, CanRestart, CanIsolate and CanSetClock say which).
func (n *Node) Controllable() bool { return n.proc != nil || n.ctr != nil || n.cmds != nil }

// runsIt says whether locklab runs the server itself.
func (n *Node) runsIt() bool { return n.proc != nil || n.ctr != nil }

// CanPause says why the server cannot be paused and resumed, or nil.
func (n *Node) CanPause() error {
	if n.runsIt() {
		return nil
	}
	return n.cmds.can(OpPause, OpResume)
}

// CanRestart says why the server cannot be killed and started again, or
// nil.
func (n *Node) CanRestart() error {
	if n.runsIt() {
		return nil
	}
	return n.cmds.can(OpKill, OpStart)
}

// Pid is the server's process id (a container's main process), or 0 when
// locklab does not run it.
func (n *Node) Pid() int {
	if n.ctr != nil {
		_, pid, _ := n.ctr.state(context.Background())
		return pid
	}
	if n.proc == nil {
		return 0
	}
	n.proc.mu.Lock()
	defer n.proc.mu.Unlock()
	if n.proc.cmd == nil || n.proc.cmd.Process == nil {
		return 0
	}
	return n.proc.cmd.Process.Pid
}

// LocalProcesses are the server process locklab runs on this machine and
// those under it (PostgreSQL's backends); none for a container's server or
// one locklab does not run.
func (n *Node) LocalProcesses() []int {
	if n.ctr != nil {
		return nil
	}
	pid := n.Pid()
	if pid == 0 {
		return nil
	}
	return append([]int{pid}, spawn.Descendants(pid)...)
}

// Pause stops the server process (SIGSTOP): it keeps its sockets but answers nothing.
func (n *Node) Pause() error {
	if n.ctr != nil {
		return n.ctr.pause()
	}
	if n.cmds != nil {
		return n.cmds.do(context.Background(), OpPause)
	}
	if n.proc == nil {
		return fmt.Errorf("pause %s: %w", n.Name, ErrUnsupported)
	}
	return n.proc.signal(syscall.SIGSTOP)
}

// Resume continues a paused server (SIGCONT).
func (n *Node) Resume() error {
	if n.ctr != nil {
		return n.ctr.resume()
	}
	if n.cmds != nil {
		return n.cmds.do(context.Background(), OpResume)
	}
	if n.proc == nil {
		return fmt.Errorf("resume %s: %w", n.Name, ErrUnsupported)
	}
	return n.proc.signal(syscall.SIGCONT)
}

// Kill ends the server at once (SIGKILL), as a crash would.
func (n *Node) Kill() error {
	if n.ctr != nil {
		return n.ctr.kill(true)
	}
	if n.cmds != nil {
		if err := n.cmds.do(context.Background(), OpKill); err != nil {
			return err
		}
		n.cmds.setKilled(true)
		return nil
	}
	if n.proc == nil {
		return fmt.Errorf("kill %s: %w", n.Name, ErrUnsupported)
	}
	n.proc.stop(0)
	n.proc.held.release()
	n.proc.held = holdPorts(n.proc.ports)
	return nil
}

// CanIsolate says whether the node can be cut off its network (a node of a
// Docker cluster, or one with isolate and rejoin fault commands), or why
// not.
func (n *Node) CanIsolate() error {
	if n.cmds != nil {
		return n.cmds.can(OpIsolate, OpRejoin)
	}
	return canIsolate(n.ctr != nil, n.ctr != nil && n.ctr.onHost)
}

// canIsolate: only a container on a network of its own can be cut off it.
func canIsolate(inContainer, onHostNetwork bool) error {
	if !inContainer {
		return errors.New("a real partition needs the servers in containers (--cluster docker)")
	}
	if onHostNetwork {
		return errors.New("it runs on the host's network (the Sentinel topology), which it cannot be cut from")
	}
	return nil
}

// Isolate cuts the server off its network, from its peers and its clients
// alike; it keeps running.
func (n *Node) Isolate() error {
	if err := n.CanIsolate(); err != nil {
		return fmt.Errorf("isolate %s: %w", n.Name, err)
	}
	if n.cmds != nil {
		return n.cmds.do(context.Background(), OpIsolate)
	}
	return n.ctr.isolate()
}

// Rejoin puts an isolated server back on its network and waits until it
// answers.
func (n *Node) Rejoin(ctx context.Context) error {
	if err := n.CanIsolate(); err != nil {
		return fmt.Errorf("rejoin %s: %w", n.Name, err)
	}
	if n.cmds != nil {
		if err := n.cmds.do(ctx, OpRejoin); err != nil {
			return err
		}
	} else if err := n.ctr.rejoin(ctx); err != nil {
		return err
	}
	return waitHealthy(ctx, n)
}

// Restart starts a killed server again on the same port and data dir and
// waits until it is healthy. A running server is killed first. One that
// exits during start-up is started once more, as its first start is: of
// three ZooKeeper members restarted together beside two busy loops, one
// JVM exited with code 1 48 s in, after a peer reset its connection.
func (n *Node) Restart(ctx context.Context) error {
	err := n.restart(ctx)
	if errors.Is(err, errExitedDuringStartUp) && ctx.Err() == nil {
		if again := n.restart(ctx); again != nil {
			return fmt.Errorf("%w; started again: %w", err, again)
		}
		return nil
	}
	return err
}

func (n *Node) restart(ctx context.Context) error {
	if n.ctr != nil {
		if err := n.ctr.kill(false); err != nil {
			return err
		}
		if err := n.ctr.start(ctx); err != nil {
			return err
		}
		return waitHealthy(ctx, n)
	}
	if n.cmds != nil {
		if err := n.cmds.restart(ctx); err != nil {
			return err
		}
		return waitHealthy(ctx, n)
	}
	if n.proc == nil {
		return fmt.Errorf("restart %s: %w", n.Name, ErrUnsupported)
	}
	n.proc.stop(0)
	n.proc.held.release()
	n.proc.held = nil
	if err := n.proc.start(); err != nil {
		return err
	}
	return waitHealthy(ctx, n)
}

// Cluster is a set of nodes with their proxies.
type Cluster struct {
	nodes []*Node
	// dsns point the user's DSN of a server kind (MySQL's, PostgreSQL's)
	// at another address (external clusters); a kind missing here is one
	// locklab runs, with its own DSN.
	dsns     map[impls.Server]func(addr string) string
	links    *namedLinks // per-client and replication proxies, made on first use
	spawn    *spawn.Spawner
	dir      string         // temp dir removed at Close; "" for external
	docker   *dockerSession // the containers' engine, network and guard (--cluster docker)
	commands *commandRunner // runs the user's fault commands (external clusters that give some)
	closeMu  sync.Mutex
	closed   bool
	Versions map[impls.Server]string
}

func newCluster() *Cluster {
	return &Cluster{
		links:    newNamedLinks(),
		Versions: map[impls.Server]string{},
	}
}

// Nodes returns every node, in start order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// NodesOf returns the nodes of one server kind.
func (c *Cluster) NodesOf(b impls.Server) []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n.Server == b {
			out = append(out, n)
		}
	}
	return out
}

// Addresses are the servers' own addresses (host:port), per kind, in
// start order: where a run's traffic goes.
func (c *Cluster) Addresses() map[impls.Server][]string {
	out := map[impls.Server][]string{}
	for _, n := range c.nodes {
		out[n.Server] = append(out[n.Server], n.direct)
	}
	return out
}

// Endpoints are the proxy addresses that lock clients use.
func (c *Cluster) Endpoints() impls.Endpoints { return c.endpoints((*Node).Addr) }

// DirectEndpoints bypass the proxies: no fault injection, but no proxy hop
// either (a proxy adds a read and a write per chunk each way),
// for benches that compare raw speed.
func (c *Cluster) DirectEndpoints() impls.Endpoints { return c.endpoints((*Node).DirectAddr) }

func (c *Cluster) endpoints(addr func(*Node) string) impls.Endpoints {
	e := impls.Endpoints{}
	for _, n := range c.nodes {
		s := e[n.Server]
		kindOfNode(n).endpoint(&s, c, n, addr(n))
		e[n.Server] = s
	}
	return e
}

// dsnOf is the DSN that reaches a server of kind s at a: the user's own
// pointed at a, or own(a) for a server locklab runs.
func (c *Cluster) dsnOf(s impls.Server, a string, own func(string) string) string {
	if dsn := c.dsns[s]; dsn != nil {
		return dsn(a)
	}
	return own(a)
}

func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func (c *Cluster) setVersion(b impls.Server, v string) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.docker != nil {
		v += " (image " + c.docker.imageOf(b) + ")"
	}
	c.Versions[b] = v
}

// startProxy puts a proxy on a free loopback port in front of upstream.
// Its error names the proxy.
func startProxy(name, upstream string) (*tcpproxy.Proxy, error) {
	p := tcpproxy.New(name, upstream)
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Close stops every server it started (SIGTERM, then SIGKILL), stops the
// proxies and removes the temp dir. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.links.stopAll()
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n.proxy != nil {
			n.proxy.Stop()
		}
		if n.proc != nil {
			wg.Add(1)
			go func(p *process) { defer wg.Done(); p.stop(5 * time.Second); p.held.release() }(n.proc)
		}
	}
	wg.Wait()
	var dockerErr error
	if c.docker != nil {
		dockerErr = c.docker.close(c.nodes)
	}
	if c.spawn != nil {
		c.spawn.Close()
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			return fmt.Errorf("remove %s: %w", c.dir, err)
		}
	}
	return dockerErr
}

// errExitedDuringStartUp: the server's process or container ended before
// it was healthy.
var errExitedDuringStartUp = errors.New("exited during start-up")

// waitHealthy polls the node's health check until it passes, the process
// exits, or ctx ends.
func waitHealthy(ctx context.Context, n *Node) error {
	var exited <-chan struct{}
	if n.proc != nil {
		_, exited = n.proc.running()
	}
	var last error
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		last = n.health(hctx)
		cancel()
		if last == nil {
			return nil
		}
		if n.ctr != nil {
			if running, _, err := n.ctr.state(ctx); err == nil && !running {
				return n.startError(errExitedDuringStartUp)
			}
		}
		select {
		case <-ctx.Done():
			return n.startError(fmt.Errorf("not healthy in time: %w", last))
		case <-exited:
			return n.startError(errExitedDuringStartUp)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (n *Node) startError(err error) error {
	if n.ctr != nil {
		if tail := n.ctr.logTail(3); tail != "" {
			return fmt.Errorf("%s: %w (log: %s)", n.Name, err, tail)
		}
	}
	if n.proc != nil {
		if tail := n.proc.logTail(3); tail != "" {
			return fmt.Errorf("%s: %w (log: %s)", n.Name, err, tail)
		}
	}
	return fmt.Errorf("%s: %w", n.Name, err)
}

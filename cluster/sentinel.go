package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/locklab/locklab/impls"
)

// The Sentinel topology (impls.RedisSentinel): one Redis primary, one
// asynchronous replica and three Sentinels, all on 127.0.0.1 behind proxies.
//
// The Sentinels watch the data nodes and each other at their direct
// addresses, and that is what they hand to clients: a fault on the clients'
// proxies (dropped replies, a partition of one client) is not one on
// Sentinel's control plane. With the Sentinels behind the clients' proxies,
// the conformance suite's dropped replies made them fail over on their own
// under load, and the tests after it met a read-only primary. Clients reach
// every node through its proxy all the same: Endpoints carries a route from
// each direct address to the proxy (or per-client link) to dial instead.
// The replica replicates from the primary directly; the failover fault
// holds that replication back first (Node.HoldReplication), which makes
// "the primary dies before the key reached the replica" certain, not a
// race.

// sentinelKind: the Sentinel topology, started whole for any node count.
func sentinelKind() Kind {
	return Kind{
		Server:      impls.RedisSentinel,
		About:       "a Redis primary, its asynchronous replica and 3 Sentinels",
		StartCost:   3 * time.Second,
		Nodes:       1,
		OnRequest:   true,
		Topology:    true,
		FailsOver:   true,
		hostNetwork: true,
		Binaries:    []Binary{{"redis-server", "redis-server"}},
		ImageFrom:   impls.Redis,
		NoFakeTime:  "the Sentinel topology is not run under libfaketime",
		nodeName:    func(i int) string { return fmt.Sprintf("sentinel-%d", i+1) },
		startLocal: func(ctx context.Context, c *Cluster, _ LocalConfig, _ int) ([]*Node, error) {
			return c.startRedisSentinel(ctx)
		},
		startDocker: func(ctx context.Context, c *Cluster, _ LocalConfig, _ int) ([]*Node, error) {
			return c.startRedisSentinel(ctx)
		},
		endpoint: sentinelEndpoint,
		role:     sentinelRole,
	}
}

// sentinelEndpoint: clients ask the Sentinels for the primary; the
// Sentinels name nodes at their direct addresses, which a client dials
// through the route to its proxy.
func sentinelEndpoint(s *impls.Servers, _ *Cluster, n *Node, a string) {
	if s.Sentinel == nil {
		s.Sentinel = &impls.Sentinel{Master: SentinelMaster, Routes: map[string]string{}}
	}
	if n.Name != SentinelPrimary && n.Name != SentinelReplica {
		s.Addrs = append(s.Addrs, a)
	}
	s.Sentinel.Routes[n.direct] = a
}

// SentinelMaster is the name the Sentinels monitor the primary under.
const SentinelMaster = "locklab"

// sentinelCount is how many Sentinels the topology runs.
const sentinelCount = 3

// Node names of the topology.
const (
	SentinelPrimary = "rs-primary"
	SentinelReplica = "rs-replica"
)

// sentinelBinary is redis-sentinel (Debian package redis-sentinel), or
// redis-server in sentinel mode, which is the same program.
func sentinelBinary() []string {
	if _, err := exec.LookPath("redis-sentinel"); err == nil {
		return []string{"redis-sentinel"}
	}
	return []string{"redis-server", "--sentinel"}
}

func (c *Cluster) startRedisSentinel(ctx context.Context) ([]*Node, error) {
	var nodes []*Node
	// A node that started but is not healthy is kept, so Close stops it.
	keep := func(n *Node) {
		if n != nil {
			nodes = append(nodes, n)
		}
	}
	// primary: an ordinary node behind its proxy.
	primary, err := c.startSentinelData(ctx, SentinelPrimary)
	keep(primary)
	if err != nil {
		return nodes, err
	}
	// The replica replicates from the primary's direct address, the one
	// the Sentinels monitor: any other they would point it back at
	// (+fix-slave-config) after failover-timeout. What is cut is cut at
	// the time of the fault (Node.HoldReplication).
	replica, err := c.startSentinelData(ctx, SentinelReplica,
		"--replicaof", "127.0.0.1", strconv.Itoa(portOf(primary.direct)))
	keep(replica)
	if err != nil {
		return nodes, err
	}
	for i := 1; i <= sentinelCount; i++ {
		n, err := c.startSentinel(ctx, i, primary.direct)
		keep(n)
		if err != nil {
			return nodes, err
		}
	}
	return nodes, nil
}

// startSentinelData starts the primary or the replica (extra arguments):
// no persistence, so a restarted primary comes back empty, as in antirez's
// warning.
func (c *Cluster) startSentinelData(ctx context.Context, name string, extra ...string) (*Node, error) {
	n, dir, port, err := c.topologyNode(name, impls.RedisSentinel)
	if err != nil {
		return nil, err
	}
	direct := n.direct
	argv := []string{"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--daemonize", "no", "--save", "", "--appendonly", "no",
		// A replica syncs at once, not after the default 5 s wait for others.
		"--repl-diskless-sync-delay", "0"}
	argv = append(argv, extra...)
	// A replica is healthy once linked to its primary: until then the
	// topology has nothing to fail over to (a test right after a restart
	// of every server met "no replica to fail over to").
	n.health = func(ctx context.Context) error {
		info, err := redisCommand(ctx, direct, "INFO")
		if err != nil {
			return err
		}
		if v := infoField(info, "redis_version"); v != "" {
			c.setVersion(impls.RedisSentinel, "redis "+v)
		}
		if infoField(info, "role") == "slave" && infoField(info, "master_link_status") != "up" {
			return fmt.Errorf("%s: replica not linked to its primary yet", name)
		}
		return nil
	}
	return n, c.runSentinelNode(ctx, n, argv, []int{port}, "redis.log", dir)
}

// runSentinelNode starts a node of the topology from argv and waits until
// it is healthy: a process of its own, or on a Docker cluster a container
// from the Redis image on the host's network, so that every address is the
// same 127.0.0.1 address as in the embedded mode (the Sentinels announce
// them to clients, and the replica replicates through a proxy in locklab).
// Its directory is mounted at the same path.
func (c *Cluster) runSentinelNode(ctx context.Context, n *Node, argv []string, ports []int, logName, dir string) error {
	if c.docker != nil {
		ctr, err := c.docker.createOnHostFrom(ctx, impls.RedisSentinel, n.Name, argv, dir)
		n.ctr = ctr
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	} else {
		n.proc = &process{name: n.Name, dir: dir, logPath: filepath.Join(dir, logName), spawn: c.spawn, argv: argv, ports: ports}
		if err := n.proc.start(); err != nil {
			return err
		}
	}
	return waitHealthy(ctx, n)
}

// sentinelDownAfter is how long a primary may leave the Sentinels' pings
// unanswered before they call it down (two must agree). At 1.5 s a
// primary container starved under load (two busy loops beside the suite)
// was failed over in the middle of the conformance suite, whose clients
// then wrote to a replica ("READONLY"); 3 s costs each failover case 1.5 s.
const sentinelDownAfter = 3 * time.Second

// startSentinel starts Sentinel i watching the primary at its direct
// address; a primary silent for sentinelDownAfter is down.
func (c *Cluster) startSentinel(ctx context.Context, i int, primary string) (*Node, error) {
	n, dir, own, err := c.topologyNode(fmt.Sprintf("sentinel-%d", i), impls.RedisSentinel)
	if err != nil {
		return nil, err
	}
	host, port := "127.0.0.1", strconv.Itoa(portOf(primary))
	// Sentinel rewrites its config file, so each has its own, writable.
	// failover-timeout is also how long a Sentinel leaves a replica that
	// replicates from an unexpected address before pointing it back
	// (+fix-slave-config, counted from when it first sees the change): the
	// failover fault holds replication by pointing the replica at a
	// proxy that passes nothing, and at 2 s Sentinel undid that hold
	// before the kill in about half of the runs. 10 s outlasts the hold;
	// the cost is a 20 s wait before a second election if the first one
	// splits its votes.
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
		"sentinel monitor %s %s %s 2\nsentinel down-after-milliseconds %s %d\n"+
		"sentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
		own, dir, SentinelMaster, host, port, SentinelMaster, sentinelDownAfter.Milliseconds(), SentinelMaster, SentinelMaster)
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	n.health = func(ctx context.Context) error {
		_, err := redisCommand(ctx, n.direct, "PING")
		return err
	}
	bin := sentinelBinary()
	if c.docker != nil {
		bin = []string{"redis-server", "--sentinel"} // in every Redis image
	}
	argv := append(bin[:1:1], append([]string{path}, bin[1:]...)...)
	return n, c.runSentinelNode(ctx, n, argv, []int{own}, "sentinel.log", dir)
}

func portOf(hostport string) int {
	for i := len(hostport) - 1; i >= 0; i-- {
		if hostport[i] == ':' {
			p, _ := strconv.Atoi(hostport[i+1:])
			return p
		}
	}
	return 0
}

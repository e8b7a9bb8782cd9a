package cluster

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
)

// ExternalConfig lists servers the user runs (e.g. with compose.yaml): in
// YAML, one key per server kind (redis: [host:port, ...], mysql: DSN, ...),
// and optionally allow-remote, fault-timeout and fault-commands.
type ExternalConfig struct {
	// Path is the file it was read from ("" when not read from one).
	Path string
	// Servers are, per kind, the addresses of its servers (host:port), or
	// for a kind reached by a DSN (MySQL, PostgreSQL) that one DSN.
	Servers map[impls.Server][]string
	// AllowRemote: the user agreed that locklab sends its traffic (floods
	// of lock requests, faults) to hosts other than this machine
	// (allow-remote: true, or --allow-remote).
	AllowRemote bool
	// FaultTimeout bounds each fault command (fault-timeout); 0:
	// DefaultFaultTimeout.
	FaultTimeout time.Duration
	// rawCommands is fault-commands as written; commands are the fault
	// commands of each node, by node name, their placeholders filled in
	// (ParseExternalConfig; see faultcmd.go).
	rawCommands faultCommandsYAML
	commands    map[string]map[string]string
}

// externalForm is how the user lists the servers of a kind.
type externalForm struct {
	// list: a list of host:port; otherwise one DSN, which parse reads.
	list    bool
	example string
	// parse reads a DSN: the server's address, and the DSN that reaches
	// it through a proxy at another address.
	parse func(dsn string) (addr string, through func(proxyAddr string) string, err error)
}

// externalNode is one server of the config: its kind, the name locklab
// gives it (redis-0, zk-1, ...) and its address.
type externalNode struct {
	kind       impls.Server
	name, addr string
}

// Has reports whether the config lists servers of kind b.
func (c ExternalConfig) Has(b impls.Server) bool { return len(c.Servers[b]) > 0 }

// The config's keys besides the server kinds.
const (
	keyAllowRemote   = "allow-remote"
	keyFaultTimeout  = "fault-timeout"
	keyFaultCommands = "fault-commands"
)

// UnmarshalYAML reads one key per server kind: a list of addresses, or a
// DSN for the kinds reached by one; and the keys of remote servers.
func (c *ExternalConfig) UnmarshalYAML(value *yaml.Node) error {
	keys := func() string {
		return strings.Join(append(externalKinds(), keyAllowRemote, keyFaultCommands, keyFaultTimeout), ", ")
	}
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping of server kinds (keys: %s)", value.Line, keys())
	}
	c.Servers = map[impls.Server][]string{}
	for i := 0; i+1 < len(value.Content); i += 2 {
		key, v := value.Content[i], value.Content[i+1]
		switch key.Value {
		case keyAllowRemote:
			if err := v.Decode(&c.AllowRemote); err != nil {
				return fmt.Errorf("line %d: %s: want true or false", key.Line, keyAllowRemote)
			}
			continue
		case keyFaultTimeout:
			d, err := decodeFaultTimeout(v)
			if err != nil {
				return err
			}
			c.FaultTimeout = d
			continue
		case keyFaultCommands:
			if err := v.Decode(&c.rawCommands); err != nil {
				return fmt.Errorf("line %d: %s: want, per server kind, node or address, a mapping of operations (%s) to shell commands: %w", key.Line, keyFaultCommands, faultOpNames(), err)
			}
			continue
		}
		k, err := KindOf(impls.Server(key.Value))
		if err != nil || k.external == nil {
			return fmt.Errorf("line %d: unknown key %q (keys: %s)", key.Line, key.Value, keys())
		}
		var vals []string
		if k.external.list {
			err = v.Decode(&vals)
		} else {
			var one string
			err = v.Decode(&one)
			vals = []string{one}
		}
		if err != nil {
			return fmt.Errorf("%s: want %s: %w", key.Value, k.external.example, err)
		}
		c.Servers[k.Server] = vals
	}
	return nil
}

// externalKinds are the kinds an external config can list, sorted.
func externalKinds() []string { return sortedKindNames(func(k Kind) bool { return k.external != nil }) }

// nodes are the servers listed, in kind order, named as ConnectExternal
// names them.
func (c ExternalConfig) nodes() ([]externalNode, error) {
	var out []externalNode
	for _, k := range Kinds() {
		for i, v := range c.Servers[k.Server] {
			if k.external == nil {
				return nil, fmt.Errorf("%s: servers of this kind cannot be external", k.Server)
			}
			a := v
			if k.external.parse != nil {
				var err error
				if a, _, err = k.external.parse(v); err != nil {
					return nil, err
				}
			}
			out = append(out, externalNode{kind: k.Server, name: k.nodeName(i), addr: a})
		}
	}
	return out, nil
}

// RemoteHosts are the hosts, other than this machine's loopback, that the
// listed servers are on: where locklab will send traffic.
func (c ExternalConfig) RemoteHosts() []string {
	nodes, _ := c.nodes()
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.addr)
	}
	return remoteHosts(addrs)
}

// remoteHosts are the distinct hosts of addrs that are not loopback,
// sorted.
func remoteHosts(addrs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil || isLoopback(host) || seen[host] {
			continue
		}
		seen[host] = true
		out = append(out, host)
	}
	sort.Strings(out)
	return out
}

// HasFaultCommands says whether the config gives any node fault commands.
func (c ExternalConfig) HasFaultCommands() bool { return len(c.commands) > 0 }

// Planned is what the nodes of kind s that a fault may pick could take:
// those named (nodes), or any of the kind when none is named. A fault a
// node has no command for is refused by its Can* methods. ok is false
// when locklab can do nothing to any of them (no fault commands), so a
// server fault is refused as on any server locklab does not run.
func (c ExternalConfig) Planned(s impls.Server, names []string) (p PlannedNode, ok bool, err error) {
	k, err := KindOf(s)
	if err != nil {
		return PlannedNode{}, false, err
	}
	all, err := c.nodes()
	if err != nil {
		return PlannedNode{}, false, err
	}
	var kindNodes []string
	for _, n := range all {
		if n.kind == s {
			kindNodes = append(kindNodes, n.name)
		}
	}
	if len(names) == 0 {
		names = kindNodes
	}
	p = PlannedNode{kind: k, external: true}
	for _, name := range names {
		if !slices.Contains(kindNodes, name) {
			return PlannedNode{}, false, fmt.Errorf("no %s node %q in %s (nodes: %s)", s, name, c.source(), strings.Join(kindNodes, ", "))
		}
		cmds := c.nodeCommands(name, nil)
		if cmds == nil {
			cmds = &nodeCommands{node: name} // none: its refusals name it
		} else {
			ok = true
		}
		p.commands = append(p.commands, cmds)
	}
	return p, ok, nil
}

// nodeCommands are node's fault commands, run by r; nil when it has none.
func (c ExternalConfig) nodeCommands(node string, r *commandRunner) *nodeCommands {
	ops := c.commands[node]
	if len(ops) == 0 {
		return nil
	}
	return &nodeCommands{node: node, ops: ops, run: r}
}

func (c ExternalConfig) source() string {
	if c.Path != "" {
		return c.Path
	}
	return "the cluster config"
}

// maxConfigSize bounds what LoadExternalConfig reads: a list of addresses
// is small, and /dev/zero is not a config.
const maxConfigSize = 1 << 20

// LoadExternalConfig reads and validates a YAML file of server addresses;
// allowRemote is --allow-remote (see ParseExternalConfig). The read stops
// at ctx's end: a FIFO nobody writes to blocks in open(2), and a Ctrl-C
// must still end the command.
func LoadExternalConfig(ctx context.Context, path string, allowRemote bool) (ExternalConfig, error) {
	cfg := ExternalConfig{Path: path, AllowRemote: allowRemote}
	type read struct {
		b      []byte
		err    error
		opened bool
	}
	done := make(chan read, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			done <- read{err: err}
			return
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
		done <- read{b, err, true}
	}()
	var r read
	select {
	case r = <-done:
	case <-ctx.Done():
		return cfg, fmt.Errorf("cluster config %s: %w", path, ctx.Err())
	}
	if r.err != nil && !r.opened {
		return cfg, fmt.Errorf("cluster config: %w", r.err) // names the path
	}
	if r.err != nil {
		return cfg, fmt.Errorf("cluster config %s: %w", path, r.err)
	}
	if len(r.b) > maxConfigSize {
		return cfg, fmt.Errorf("cluster config %s: larger than %d bytes; not a list of addresses", path, maxConfigSize)
	}
	if err := ParseExternalConfig(r.b, &cfg); err != nil {
		return cfg, fmt.Errorf("cluster config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseExternalConfig decodes and validates YAML; unknown keys are errors,
// so a typo does not silently drop a server kind. An address that is not
// this machine's is refused unless cfg.AllowRemote is set before (the
// --allow-remote flag) or by the YAML (allow-remote: true).
func ParseExternalConfig(b []byte, cfg *ExternalConfig) error {
	allow, path := cfg.AllowRemote, cfg.Path
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("malformed YAML: %w", err)
	}
	cfg.AllowRemote = cfg.AllowRemote || allow
	cfg.Path = path
	nodes, err := cfg.nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := checkAddress(n.addr, cfg.AllowRemote); err != nil {
			return err
		}
	}
	if len(nodes) == 0 {
		return fmt.Errorf("no servers listed (keys: %s)", strings.Join(externalKinds(), ", "))
	}
	cfg.commands, err = resolveFaultCommands(cfg.rawCommands, nodes)
	return err
}

// checkAddress checks a server's host:port, and keeps the lab's traffic
// on this machine unless the user allowed other hosts: locklab floods
// servers with requests and injects faults, which is no thing to do to a
// host by accident.
func checkAddress(a string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("address %q: %w", a, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("address %q: port %q is not a port (1-65535)", a, port)
	}
	if !isLoopback(host) && !allowRemote {
		return fmt.Errorf("address %q is not on this machine's loopback (127.0.0.0/8, ::1, localhost): locklab floods its servers and injects faults, so it sends traffic to another host only with --allow-remote (or allow-remote: true in the config)", a)
	}
	return nil
}

// isLoopback says whether host is this machine's loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ConnectExternal checks that every listed server answers in its own
// protocol and puts a proxy in front of each. Nodes with fault commands
// can be paused, killed, restarted, isolated or have their clock moved
// through them (see faultcmd.go).
func ConnectExternal(ctx context.Context, cfg ExternalConfig) (_ *Cluster, err error) {
	c := newCluster()
	c.dsns = map[impls.Server]func(string) string{}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if len(cfg.commands) > 0 {
		c.spawn = spawn.New()
		c.commands = &commandRunner{spawn: c.spawn, timeout: cmp.Or(cfg.FaultTimeout, DefaultFaultTimeout)}
	}
	nodes, err := cfg.nodes()
	if err != nil {
		return nil, err
	}
	for _, en := range nodes {
		k := kindNamed(en.kind)
		if k.external.parse != nil {
			_, through, err := k.external.parse(cfg.Servers[k.Server][0])
			if err != nil {
				return nil, err
			}
			c.dsns[k.Server] = through
		}
		if err := c.addExternal(ctx, k, en.name, en.addr, cfg.nodeCommands(en.name, c.commands)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// addExternal adds the user's server of kind k at a, once it answers.
func (c *Cluster) addExternal(ctx context.Context, k Kind, name, a string, cmds *nodeCommands) error {
	n := &Node{Name: name, Server: k.Server, direct: a, cmds: cmds, health: c.externalHealth(k, a)}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := waitHealthy(hctx, n); err != nil {
		return fmt.Errorf("%s at %s unreachable: %w", name, a, err)
	}
	p, err := startProxy(name, a)
	if err != nil {
		return err
	}
	n.proxy = p
	c.nodes = append(c.nodes, n)
	return nil
}

// externalHealth checks a user's server as one locklab runs is checked
// (which also notes its version), as long as that check ever passed; a
// server whose full check needs what locklab does not have (a password)
// counts as up once it answers in its own protocol.
func (c *Cluster) externalHealth(k Kind, a string) func(context.Context) error {
	full := k.health(c, a)
	var fullWorks atomic.Bool
	return func(ctx context.Context) error {
		err := full(ctx)
		if err == nil {
			fullWorks.Store(true)
			return nil
		}
		if fullWorks.Load() {
			return err
		}
		return k.speaks(ctx, a)
	}
}

// SetFaultLog has the output of every fault command written to w (the
// run's fault-commands.log).
func (c *Cluster) SetFaultLog(w io.Writer) {
	if c.commands == nil {
		return
	}
	c.commands.mu.Lock()
	defer c.commands.mu.Unlock()
	c.commands.log = w
}

// answers sends req to a and waits for at least one byte back. Accepting
// a connection is not enough: Docker's port proxy accepts on behalf of a
// container whose server is not up yet, then hangs up (seen with
// compose.yaml's MariaDB: a bench right after it "answered" failed with
// "invalid connection").
func answers(ctx context.Context, a string, req []byte) error {
	conn, err := dialAndSend(ctx, a, req)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	return nil
}

// dialAndSend connects to a and sends req (if any); the connection's reads
// and writes end at ctx's deadline, as the dial does.
func dialAndSend(ctx context.Context, a string, req []byte) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", a)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if len(req) > 0 {
		if _, err := conn.Write(req); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/impls"
)

// ExternalConfig lists servers the user runs (e.g. with compose.yaml): in
// YAML, one key per server kind (redis: [host:port, ...], mysql: DSN, ...).
type ExternalConfig struct {
	// Servers are, per kind, the addresses of its servers (host:port), or
	// for a kind reached by a DSN (MySQL, PostgreSQL) that one DSN.
	Servers map[impls.Server][]string
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

// Has reports whether the config lists servers of kind b.
func (c ExternalConfig) Has(b impls.Server) bool { return len(c.Servers[b]) > 0 }

// UnmarshalYAML reads one key per server kind: a list of addresses, or a
// DSN for the kinds reached by one.
func (c *ExternalConfig) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping of server kinds (keys: %s)", value.Line, strings.Join(externalKinds(), ", "))
	}
	c.Servers = map[impls.Server][]string{}
	for i := 0; i+1 < len(value.Content); i += 2 {
		key, v := value.Content[i], value.Content[i+1]
		k, err := KindOf(impls.Server(key.Value))
		if err != nil || k.external == nil {
			return fmt.Errorf("line %d: unknown key %q (keys: %s)", key.Line, key.Value, strings.Join(externalKinds(), ", "))
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

// addresses are the host:port of every server listed, per kind.
func (c ExternalConfig) addresses() (map[impls.Server][]string, error) {
	out := map[impls.Server][]string{}
	for _, k := range Kinds() {
		for _, v := range c.Servers[k.Server] {
			a := v
			if k.external != nil && k.external.parse != nil {
				var err error
				if a, _, err = k.external.parse(v); err != nil {
					return nil, err
				}
			}
			out[k.Server] = append(out[k.Server], a)
		}
	}
	return out, nil
}

// maxConfigSize bounds what LoadExternalConfig reads: a list of addresses
// is small, and /dev/zero is not a config.
const maxConfigSize = 1 << 20

// LoadExternalConfig reads and validates a YAML file of server addresses.
// The read stops at ctx's end: a FIFO nobody writes to blocks in open(2),
// and a Ctrl-C must still end the command.
func LoadExternalConfig(ctx context.Context, path string) (ExternalConfig, error) {
	var cfg ExternalConfig
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
// so a typo does not silently drop a server kind.
func ParseExternalConfig(b []byte, cfg *ExternalConfig) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("malformed YAML: %w", err)
	}
	addrs, err := cfg.addresses()
	if err != nil {
		return err
	}
	for _, as := range addrs {
		for _, a := range as {
			if err := checkLoopback(a); err != nil {
				return err
			}
		}
	}
	if len(addrs) == 0 {
		return fmt.Errorf("no servers listed (keys: %s)", strings.Join(externalKinds(), ", "))
	}
	return nil
}

// checkLoopback keeps the lab's traffic on this machine: locklab injects
// faults and floods servers, which is no thing to do to a shared host.
func checkLoopback(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("address %q: %w", a, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("address %q: port %q is not a port (1-65535)", a, port)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q is not on loopback (127.0.0.0/8, ::1, localhost)", a)
	}
	return nil
}

// ConnectExternal checks that every listed server answers in its own
// protocol and puts a proxy in front of each.
func ConnectExternal(ctx context.Context, cfg ExternalConfig) (_ *Cluster, err error) {
	c := newCluster()
	c.dsns = map[impls.Server]func(string) string{}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for _, k := range Kinds() {
		for i, v := range cfg.Servers[k.Server] {
			if k.external == nil {
				return nil, fmt.Errorf("%s: servers of this kind cannot be external", k.Server)
			}
			a := v
			if k.external.parse != nil {
				var through func(string) string
				if a, through, err = k.external.parse(v); err != nil {
					return nil, err
				}
				c.dsns[k.Server] = through
			}
			if err := c.addExternal(ctx, k, k.nodeName(i), a); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// addExternal adds the user's server of kind k at a, once it answers.
func (c *Cluster) addExternal(ctx context.Context, k Kind, name, a string) error {
	n := &Node{Name: name, Server: k.Server, direct: a, health: func(ctx context.Context) error { return k.speaks(ctx, a) }}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := waitHealthy(hctx, n); err != nil {
		return fmt.Errorf("%s at %s unreachable: %w", name, a, err)
	}
	p, err := c.addProxy(name, a)
	if err != nil {
		return err
	}
	n.proxy = p
	c.nodes = append(c.nodes, n)
	return nil
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

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/impls"
)

// ExternalConfig lists servers the user runs (e.g. with compose.yaml).
type ExternalConfig struct {
	Redis     []string `yaml:"redis"`     // host:port of independent masters
	MySQL     string   `yaml:"mysql"`     // go-sql-driver DSN, e.g. root:pw@tcp(127.0.0.1:3306)/locklab
	ZooKeeper []string `yaml:"zookeeper"` // host:port of ensemble members
	Postgres  string   `yaml:"postgres"`  // URL, e.g. postgres://postgres:pw@127.0.0.1:5432/locklab?sslmode=disable
	Etcd      []string `yaml:"etcd"`      // host:port of cluster members' client URLs
}

// Has reports whether the config lists servers of kind b.
func (c ExternalConfig) Has(b impls.Server) bool {
	switch b {
	case impls.Redis:
		return len(c.Redis) > 0
	case impls.MySQL:
		return c.MySQL != ""
	case impls.ZooKeeper:
		return len(c.ZooKeeper) > 0
	case impls.Postgres:
		return c.Postgres != ""
	case impls.Etcd:
		return len(c.Etcd) > 0
	}
	return false
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

// ParseExternalConfig decodes and validates YAML; unknown fields are errors,
// so a typo does not silently drop a backend.
func ParseExternalConfig(b []byte, cfg *ExternalConfig) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("malformed YAML: %w", err)
	}
	for _, a := range append(append(append([]string{}, cfg.Redis...), cfg.ZooKeeper...), cfg.Etcd...) {
		if err := checkLoopback(a); err != nil {
			return err
		}
	}
	if cfg.Postgres != "" {
		addr, err := postgresURLAddr(cfg.Postgres)
		if err != nil {
			return err
		}
		if err := checkLoopback(addr); err != nil {
			return err
		}
	}
	if cfg.MySQL != "" {
		m, err := mysql.ParseDSN(cfg.MySQL)
		if err != nil {
			return fmt.Errorf("mysql DSN: %w", err)
		}
		if m.Net != "tcp" {
			return fmt.Errorf("mysql DSN: network %q, want tcp", m.Net)
		}
		if err := checkLoopback(m.Addr); err != nil {
			return err
		}
	}
	if len(cfg.Redis) == 0 && cfg.MySQL == "" && len(cfg.ZooKeeper) == 0 && cfg.Postgres == "" && len(cfg.Etcd) == 0 {
		return fmt.Errorf("no servers listed (keys: redis, mysql, zookeeper, postgres, etcd)")
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

// ConnectExternal checks that every listed server accepts connections and
// puts a proxy in front of each.
func ConnectExternal(ctx context.Context, cfg ExternalConfig) (_ *Cluster, err error) {
	c := newCluster()
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	add := func(name string, b impls.Server, a string) error {
		n := &Node{Name: name, Server: b, direct: a, health: func(ctx context.Context) error { return speaks(ctx, b, a) }}
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
	for i, a := range cfg.Redis {
		if err := add(fmt.Sprintf("redis-%d", i), impls.Redis, a); err != nil {
			return nil, err
		}
	}
	if cfg.MySQL != "" {
		m, _ := mysql.ParseDSN(cfg.MySQL)
		if err := add("mysql-0", impls.MySQL, m.Addr); err != nil {
			return nil, err
		}
		c.mysqlDSN = func(proxyAddr string) string {
			m2 := m.Clone()
			m2.Addr = proxyAddr
			m2.InterpolateParams = true
			return m2.FormatDSN()
		}
	}
	for i, a := range cfg.ZooKeeper {
		if err := add(fmt.Sprintf("zk-%d", i+1), impls.ZooKeeper, a); err != nil {
			return nil, err
		}
	}
	if cfg.Postgres != "" {
		addr, _ := postgresURLAddr(cfg.Postgres)
		if err := add("postgres-0", impls.Postgres, addr); err != nil {
			return nil, err
		}
		c.postgresDSN = func(proxyAddr string) string {
			u, _ := url.Parse(cfg.Postgres)
			u.Host = proxyAddr
			return u.String()
		}
	}
	for i, a := range cfg.Etcd {
		if err := add(fmt.Sprintf("etcd-%d", i), impls.Etcd, a); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// postgresURLAddr is the host:port of a postgres:// URL.
func postgresURLAddr(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", fmt.Errorf("postgres: want a URL like postgres://user:pw@127.0.0.1:5432/db, got %q", dsn)
	}
	if u.Port() == "" {
		return u.Host + ":5432", nil
	}
	return u.Host, nil
}

// speaks says whether the server at a answers in its own protocol, without
// credentials. Accepting a connection is not enough: Docker's port proxy
// accepts on behalf of a container whose server is not up yet, then hangs
// up (seen with compose.yaml's MariaDB: a bench right after it "answered"
// failed with "invalid connection").
func speaks(ctx context.Context, b impls.Server, a string) error {
	switch b {
	case impls.Redis:
		_, err := redisCommand(ctx, a, "PING")
		if err != nil && strings.Contains(err.Error(), "redis answered") {
			return nil // an error reply (NOAUTH) is an answer
		}
		return err
	case impls.MySQL:
		return answers(ctx, a, nil) // MariaDB speaks first
	case impls.ZooKeeper:
		_, err := ZKFourLetter(ctx, a, "srvr") // any answer, even "not in the whitelist"
		return err
	case impls.Postgres:
		// An SSLRequest: the server answers one byte, S or N.
		return answers(ctx, a, []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f})
	case impls.Etcd:
		return answers(ctx, a, []byte("GET /health HTTP/1.0\r\n\r\n"))
	}
	return answers(ctx, a, nil)
}

// answers sends req to a and waits for at least one byte back.
func answers(ctx context.Context, a string, req []byte) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", a)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if len(req) > 0 {
		if _, err := conn.Write(req); err != nil {
			return err
		}
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	return nil
}

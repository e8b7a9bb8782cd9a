package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/locklab/locklab/impls"
)

// TestLocalFullCluster starts the whole embedded default against the real
// binaries: 5 Redis, 1 MariaDB, 3 ZooKeeper, each behind a proxy.
func TestLocalFullCluster(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	c, err := StartLocal(ctx, ForServers(impls.Redis, impls.MySQL, impls.ZooKeeper))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("9 nodes healthy after %v", time.Since(start))
	dir := c.dir
	if got := len(c.Nodes()); got != 9 {
		t.Fatalf("nodes = %d, want 9", got)
	}
	e := c.Endpoints()
	if len(e[impls.Redis].Addrs) != 5 || len(e[impls.ZooKeeper].Addrs) != 3 || e.DSN(impls.MySQL) == "" {
		t.Fatalf("endpoints = %+v", e)
	}
	for _, n := range c.Nodes() {
		if n.Addr() == n.DirectAddr() || !strings.HasPrefix(n.Addr(), "127.0.0.1:") {
			t.Fatalf("%s: proxy %s direct %s", n.Name, n.Addr(), n.DirectAddr())
		}
	}
	// Through the proxy, each server answers.
	if out, err := redisCommand(ctx, e[impls.Redis].Addrs[4], "PING"); err != nil || out != "PONG" {
		t.Fatalf("redis via proxy: %q %v", out, err)
	}
	if out, err := ZKFourLetter(ctx, e[impls.ZooKeeper].Addrs[2], "ruok"); err != nil || out != "imok" {
		t.Fatalf("zk via proxy: %q %v", out, err)
	}
	db, err := sql.Open("mysql", e.DSN(impls.MySQL))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("mysql via proxy: %v", err)
	}
	db.Close()
	for _, b := range []impls.Server{impls.Redis, impls.MySQL, impls.ZooKeeper} {
		if c.Versions[b] == "" {
			t.Errorf("no version for %s", b)
		}
	}
	pids := []int{}
	for _, n := range c.Nodes() {
		pids = append(pids, n.Pid())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still running after Close", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s not removed: %v", dir, err)
	}
}

// oneRedis is a local Redis node, closed when t ends.
func oneRedis(t *testing.T) *Node {
	t.Helper()
	c, err := StartLocal(context.Background(), LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.NodesOf(impls.Redis)[0]
}

func TestNodePauseKillRestart(t *testing.T) {
	ctx := context.Background()
	n := oneRedis(t)
	if _, err := redisCommand(ctx, n.Addr(), "SET k v"); err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := redisCommand(pctx, n.Addr(), "PING")
	cancel()
	if err == nil {
		t.Fatal("paused server answered PING")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if out, err := redisCommand(ctx, n.Addr(), "PING"); err != nil || out != "PONG" {
		t.Fatalf("after resume: %q %v", out, err)
	}
	if _, err := redisCommand(ctx, n.Addr(), "SET held-before-restart 1"); err != nil {
		t.Fatal(err)
	}
	oldPid := n.Pid()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := redisCommand(ctx, n.DirectAddr(), "PING"); err == nil {
		t.Fatal("killed server answered")
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Pid() == oldPid {
		t.Fatal("restart kept the old pid")
	}
	// Same port, same proxy; no persistence configured, so the key is gone.
	if out, err := redisCommand(ctx, n.Addr(), "PING"); err != nil || out != "PONG" {
		t.Fatalf("after restart: %q %v", out, err)
	}
	if out, err := redisCommand(ctx, n.Addr(), "EXISTS held-before-restart"); err != nil || out != "0" {
		t.Fatalf("EXISTS after a restart without persistence: %q %v, want 0", out, err)
	}
}

func TestMissingBinaryNamesPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := StartLocal(context.Background(), LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	if err == nil || !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseExternalConfig(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"ok", "redis: [127.0.0.1:6379]\nmysql: root@tcp(127.0.0.1:3306)/locklab\nzookeeper: [localhost:2181]\n", ""},
		{"malformed", "redis: [127.0.0.1:6379\n", "malformed YAML"},
		{"typo", "rediss: [127.0.0.1:6379]\n", `unknown key "rediss" (keys: etcd, mysql, postgres, redis, zookeeper, allow-remote, fault-commands, fault-timeout)`},
		{"remote", "redis: [10.0.0.1:6379]\n", "not on this machine's loopback (127.0.0.0/8, ::1, localhost): locklab floods its servers and injects faults, so it sends traffic to another host only with --allow-remote"},
		{"bad dsn", "mysql: 'nope'\n", "mysql DSN"},
		{"empty", "{}\n", "no servers listed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg ExternalConfig
			parseAs(t, tt.yaml, &cfg, tt.wantErr)
		})
	}
}

func TestConnectExternalUnreachable(t *testing.T) {
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ConnectExternal(context.Background(), ExternalConfig{Servers: map[impls.Server][]string{impls.Redis: {addr(ports[0])}}})
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v", err)
	}
}

func TestConnectExternalMySQLDSNGoesThroughProxy(t *testing.T) {
	ctx := context.Background()
	local, err := StartLocal(ctx, LocalConfig{Nodes: map[impls.Server]int{impls.MySQL: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	dsn := "root@tcp(" + local.NodesOf(impls.MySQL)[0].DirectAddr() + ")/locklab"
	ext, err := ConnectExternal(ctx, ExternalConfig{Servers: map[impls.Server][]string{impls.MySQL: {dsn}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	m, err := mysql.ParseDSN(ext.Endpoints().DSN(impls.MySQL))
	if err != nil {
		t.Fatal(err)
	}
	if m.Addr != ext.NodesOf(impls.MySQL)[0].Addr() {
		t.Fatalf("DSN addr %s, want the proxy %s", m.Addr, ext.NodesOf(impls.MySQL)[0].Addr())
	}
	db, _ := sql.Open("mysql", ext.Endpoints().DSN(impls.MySQL))
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestExampleConfigParses keeps the shipped example in step with the parser.
func TestExampleConfigParses(t *testing.T) {
	cfg, err := LoadExternalConfig(context.Background(), "../examples/compose-cluster.yaml", false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[impls.Server]int{impls.Redis: 5, impls.MySQL: 1, impls.ZooKeeper: 3, impls.Postgres: 1, impls.Etcd: 3}
	if len(cfg.Servers) != len(want) {
		t.Fatalf("example config: %+v", cfg)
	}
	for s, n := range want {
		if len(cfg.Servers[s]) != n {
			t.Fatalf("example config: %d %s servers, want %d: %+v", len(cfg.Servers[s]), s, n, cfg)
		}
	}
}

func TestLocalPostgresAndEtcd(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	c, err := StartLocal(ctx, ForServers(impls.Postgres, impls.Etcd))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("postgres + 3 etcd healthy after %v", time.Since(start))
	if len(c.NodesOf(impls.Etcd)) != 3 || len(c.NodesOf(impls.Postgres)) != 1 {
		t.Fatalf("nodes: %d etcd, %d postgres", len(c.NodesOf(impls.Etcd)), len(c.NodesOf(impls.Postgres)))
	}
	if c.Versions[impls.Postgres] == "" || c.Versions[impls.Etcd] == "" {
		t.Fatalf("versions: %v", c.Versions)
	}
	// Through the proxies.
	var health struct{ Health string }
	if err := getJSON(ctx, "http://"+c.Endpoints()[impls.Etcd].Addrs[0]+"/health", &health); err != nil || health.Health != "true" {
		t.Fatalf("etcd via proxy: %v %q", err, health.Health)
	}
	n := c.NodesOf(impls.Postgres)[0]
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatalf("postgres restart: %v", err)
	}
}

// TestLongTempRoot: MariaDB and PostgreSQL start, and start again, under a
// temp root whose paths are too long for a Unix socket (107 bytes); they
// failed to start there while they put a socket in their directory.
func TestLongTempRoot(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := base + "/" + strings.Repeat("x", 110)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL runs as its own user when we are root: it must reach its
	// directory, as it does under any TMPDIR a user would choose.
	for d := root; len(d) >= len(filepath.Dir(base)); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := ForServers(impls.MySQL, impls.Postgres)
	cfg.TempRoot = root
	c, err := StartLocal(ctx, cfg)
	if err != nil {
		t.Fatalf("start under a %d-byte temp root: %v", len(root), err)
	}
	defer c.Close()
	for _, n := range c.Nodes() {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := n.Restart(ctx); err != nil {
			t.Fatalf("%s: restart under a long temp root: %v", n.Name, err)
		}
	}
}

// Run as root, PostgreSQL runs as the postgres user; under a private TMPDIR
// it cannot reach its data directory. The start fails at once, naming the
// directory it cannot enter and what to do (initdb's own error names only
// the data directory).
func TestPostgresUnderPrivateTempRootSaysWhy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs PostgreSQL as another user")
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := ForServers(impls.Postgres)
	cfg.TempRoot = private
	c, err := StartLocal(context.Background(), cfg)
	if err == nil {
		c.Close()
		t.Fatal("PostgreSQL started under a private temp root")
	}
	if !strings.Contains(err.Error(), "cannot enter "+private) || !strings.Contains(err.Error(), "TMPDIR") {
		t.Fatalf("error = %v, want it to name %s and TMPDIR", err, private)
	}
}

// A server that exits during a restart's start-up is started once more; one
// that exits again is an error naming both starts, not a hang.
func TestRestartStartsAgainAServerThatExitsDuringStartUp(t *testing.T) {
	ctx := context.Background()
	n := oneRedis(t)
	real := n.proc.argv
	for _, tt := range []struct {
		name     string
		failures int // starts that exit at once before the server runs
		wantErr  bool
	}{
		{"once", 1, false},
		{"twice", 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			starts := filepath.Join(t.TempDir(), "starts")
			// Each start appends a line; the first failures exit 1.
			n.proc.argv = append([]string{"sh", "-c", fmt.Sprintf(`echo x >> %s; [ "$(wc -l < %s)" -gt %d ] || exit 1; exec "$@"`, starts, starts, tt.failures), "sh"}, real...)
			defer func() { n.proc.argv = real }()
			err := n.Restart(ctx)
			b, _ := os.ReadFile(starts)
			if got := strings.Count(string(b), "x"); got != min(tt.failures+1, 2) {
				t.Errorf("started %d times, want %d", got, min(tt.failures+1, 2))
			}
			if tt.wantErr {
				if err == nil || strings.Count(err.Error(), "exited during start-up") != 2 {
					t.Fatalf("err = %v, want both starts' exits named", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out, err := redisCommand(ctx, n.Addr(), "PING"); err != nil || out != "PONG" {
				t.Fatalf("after restart: %q %v", out, err)
			}
		})
	}
}

package cluster

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/locklab/locklab/impls"
)

func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func (c *Cluster) setVersion(b impls.Server, v string) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.docker != nil {
		v += " (image " + c.docker.imageOf(b) + ")"
	}
	c.Versions[b] = v
}

// ---- Redis ----

// redisOptions say how every Redis node runs (LocalConfig's persistence
// and faketime settings).
type redisOptions struct {
	persistence string // see redisPersistenceArgs
	fakeTime    bool   // under libfaketime, its wall clock movable (faketime.go)
}

func (c *Cluster) startRedis(ctx context.Context, i int, opt redisOptions) (*Node, error) {
	name := fmt.Sprintf("redis-%d", i)
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	persist, err := redisPersistenceArgs(opt.persistence)
	if err != nil {
		return nil, err
	}
	var env []string
	if opt.fakeTime {
		if env, err = fakeTimeEnv(dir, true); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return c.startNode(ctx, name, impls.Redis, func(ports []int) (*process, string, func(context.Context) error, error) {
		p := &process{
			name: name, dir: dir, logPath: filepath.Join(dir, "redis.log"), spawn: c.spawn, env: env,
			argv: append([]string{"redis-server", "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1",
				"--dir", dir, "--daemonize", "no"}, persist...),
		}
		a := addr(ports[0])
		return p, a, c.redisHealth(a), nil
	}, 1)
}

// redisHealth: the node at a answers INFO (and says its version), and has
// loaded its data: INFO answers while a restarted node still reads its
// append-only file, when every command that touches a key gets -LOADING.
func (c *Cluster) redisHealth(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		info, err := redisCommand(ctx, a, "INFO")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(info, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "redis_version:"); ok {
				c.setVersion(impls.Redis, "redis "+v)
			}
			if l == "loading:1" {
				return errors.New("still loading its data")
			}
		}
		return nil
	}
}

// redisCommand sends one inline command and returns the raw reply; enough for
// a health check without a client library.
func redisCommand(ctx context.Context, a, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", a)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	switch head[0] {
	case '+', ':':
		return strings.TrimSpace(head[1:]), nil
	case '$':
		n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad reply %q", head)
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("redis answered %q", strings.TrimSpace(head))
	}
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ---- MariaDB ----

// MySQLDatabase is the schema lock tables live in.
const MySQLDatabase = "locklab"

func mysqlDSN(a string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = a
	cfg.DBName = MySQLDatabase
	// One round trip per statement instead of prepare/execute/close.
	cfg.InterpolateParams = true
	return cfg.FormatDSN()
}

// mariadbSocket is relative: mariadbd changes into its data dir at
// start-up, so the socket lands there whatever the length of TMPDIR (a
// Unix socket path is limited to 107 bytes; clients use TCP anyway).
const mariadbSocket = "mariadbd.sock"

func (c *Cluster) startMariaDB(ctx context.Context) (*Node, error) {
	const name = "mysql-0"
	dir := filepath.Join(c.dir, name)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--user=root")
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: mariadb-install-db: %w: %s", name, err, lastLine(string(out)))
	}
	c.mysqlDSN = mysqlDSN
	return c.startNode(ctx, name, impls.MySQL, func(ports []int) (*process, string, func(context.Context) error, error) {
		p := &process{
			name: name, dir: dir, logPath: filepath.Join(dir, "mariadbd.log"), spawn: c.spawn,
			argv: []string{"mariadbd", "--no-defaults", "--datadir=" + data, "--socket=" + mariadbSocket,
				"--port=" + strconv.Itoa(ports[0]), "--bind-address=127.0.0.1", "--user=root", "--skip-log-bin",
				"--skip-name-resolve", "--performance-schema=OFF", "--max-connections=2000",
				"--innodb-buffer-pool-size=128M"},
		}
		a := addr(ports[0])
		return p, a, c.mariadbHealth(a), nil
	}, 1)
}

// mariadbHealth: the server at a takes root's queries; it also creates the
// lock tables' database.
func (c *Cluster) mariadbHealth(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr = "root", "tcp", a
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return err
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+MySQLDatabase); err != nil {
			return err
		}
		var v string
		if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
			return err
		}
		c.setVersion(impls.MySQL, "mariadb "+v)
		return nil
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// ---- ensembles (ZooKeeper, etcd) ----

// startEnsemble starts size nodes that know each other's ports, waits until
// all are healthy (a member is healthy only once a quorum is up, so they
// start together), then puts proxies in front. A port taken in the
// meantime means a fresh set of ports.
func (c *Cluster) startEnsemble(ctx context.Context, size, portsPerNode int, build func(i int, ports []int) (*Node, error)) ([]*Node, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		nodes, err := c.tryEnsemble(ctx, size, portsPerNode, build)
		if err == nil {
			return nodes, nil
		}
		lastErr = err
		// A member that died while starting most often lost a race for
		// one of its ports; fresh ports usually cure it.
		if !errors.Is(err, errExitedDuringStartUp) && !strings.Contains(strings.ToLower(err.Error()), "in use") {
			break
		}
	}
	return nil, lastErr
}

func (c *Cluster) tryEnsemble(ctx context.Context, size, portsPerNode int, build func(i int, ports []int) (*Node, error)) ([]*Node, error) {
	ports, err := freePorts(portsPerNode * size)
	if err != nil {
		return nil, err
	}
	nodes := make([]*Node, 0, size)
	cleanup := func() {
		for _, n := range nodes {
			n.proc.stop(0)
		}
	}
	for i := 0; i < size; i++ {
		n, err := build(i, ports)
		if err != nil {
			cleanup()
			return nil, err
		}
		n.proc.ports = ports[portsPerNode*i : portsPerNode*(i+1)]
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := n.proc.start(); err != nil {
			cleanup()
			return nil, err
		}
	}
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func(i int, n *Node) { defer wg.Done(); errs[i] = waitHealthy(ctx, n) }(i, n)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			cleanup()
			return nil, err
		}
	}
	for _, n := range nodes {
		p, err := c.addProxy(n.Name, n.direct)
		if err != nil {
			cleanup()
			return nil, err
		}
		n.proxy = p
	}
	return nodes, nil
}

// ---- ZooKeeper ----

func (c *Cluster) startZooKeeper(ctx context.Context, size int) ([]*Node, error) {
	return c.startEnsemble(ctx, size, 3, func(i int, ports []int) (*Node, error) {
		var servers strings.Builder
		for j := 0; j < size; j++ { // client, peer, election port per node
			fmt.Fprintf(&servers, "server.%d=127.0.0.1:%d:%d\n", j+1, ports[3*j+1], ports[3*j+2])
		}
		name := fmt.Sprintf("zk-%d", i+1)
		dir := filepath.Join(c.dir, name)
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			return nil, err
		}
		// A short tick keeps sessions and failure detection fast (a
		// dead leader is noticed after syncLimit ticks, 1 s). initLimit
		// bounds a member's connect and sync with the leader, which a
		// restarted member does with a cold JVM: 2 s (10 ticks) was not
		// enough on a loaded machine, so it timed out, rejoined the
		// election and timed out again until the health check gave up.
		cfg := fmt.Sprintf("tickTime=200\ninitLimit=50\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n"+
			"clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"+
			"maxClientCnxns=0\n%s", data, ports[3*i], servers.String())
		if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		a := addr(ports[3*i])
		return &Node{
			Name: name, Server: impls.ZooKeeper, direct: a,
			proc: &process{
				name: name, dir: dir, logPath: filepath.Join(dir, "zookeeper.log"), spawn: c.spawn,
				argv: []string{"java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC",
					// Debian's zookeeper.jar names its dependencies in its
					// manifest, all but a logging binding: without log4j here
					// SLF4J falls back to no-op and a failing server says
					// nothing at all.
					"-Dzookeeper.log.dir=" + dir, "-Dzookeeper.root.logger=WARN,CONSOLE",
					"-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar",
					"org.apache.zookeeper.server.quorum.QuorumPeerMain", "./zoo.cfg"},
			},
			health: c.zooKeeperHealth(a),
		}, nil
	})
}

// zooKeeperHealth: the member at a serves as leader or follower.
func (c *Cluster) zooKeeperHealth(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		out, err := ZKFourLetter(ctx, a, "srvr")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "Mode: leader") && !strings.Contains(out, "Mode: follower") {
			return fmt.Errorf("not serving yet")
		}
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "Zookeeper version: "); ok {
				c.setVersion(impls.ZooKeeper, "zookeeper "+strings.SplitN(v, "-", 2)[0])
			}
		}
		return nil
	}
}

// ZKFourLetter sends a ZooKeeper four-letter command ("srvr", "ruok") and
// returns the answer.
func ZKFourLetter(ctx context.Context, a, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", a)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if sb.Len() == 0 {
		return "", fmt.Errorf("no answer to %s", cmd)
	}
	return sb.String(), nil
}

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/impls"
)

// ---- PostgreSQL ----

const pgBin = "/usr/lib/postgresql/15/bin"

// PostgresDatabase is the database lock clients use.
const PostgresDatabase = "postgres"

func postgresDSN(a string) string {
	host, port, _ := strings.Cut(a, ":")
	return fmt.Sprintf("host=%s port=%s user=postgres dbname=%s sslmode=disable connect_timeout=5", host, port, PostgresDatabase)
}

// postgresUser is whom the server runs as: PostgreSQL refuses to run as root.
func postgresUser() (uid, gid int, err error) {
	if os.Geteuid() != 0 {
		return 0, 0, nil // run as ourselves
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, fmt.Errorf("PostgreSQL will not run as root and there is no postgres user: install the Debian package postgresql")
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

func (c *Cluster) startPostgres(ctx context.Context) (*Node, error) {
	const name = "postgres-0"
	uid, gid, err := postgresUser()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.dir, name)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if uid > 0 {
		// The server's user must reach its directory inside our temp dir.
		if err := os.Chmod(c.dir, 0o711); err != nil {
			return nil, err
		}
		if err := reachable(filepath.Dir(c.dir), uid, gid); err != nil {
			return nil, fmt.Errorf("%s: PostgreSQL runs as user postgres (locklab runs as root), which %w: set TMPDIR to a directory others can enter", name, err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	initdb := exec.CommandContext(ctx, pgBin+"/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	if uid > 0 {
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: initdb: %w: %s", name, err, lastLine(string(out)))
	}
	return c.startNode(ctx, name, impls.Postgres, func(ports []int) (*process, string, func(context.Context) error, error) {
		p := &process{
			name: name, dir: dir, logPath: filepath.Join(dir, "postgres.log"), spawn: c.spawn, uid: uid, gid: gid, stopSig: syscall.SIGINT,
			// No Unix socket: clients use TCP, and a socket inside a long
			// TMPDIR passes the 107-byte limit of a socket path.
			argv: []string{pgBin + "/postgres", "-D", data, "-p", strconv.Itoa(ports[0]),
				"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
				"-c", "max_connections=500", "-c", "shared_buffers=64MB"},
		}
		if uid > 0 {
			// The log is opened by us (root) before the server starts.
			f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
		}
		a := addr(ports[0])
		return p, a, c.postgresHealth(a), nil
	}, 1)
}

// postgresHealth: the server at a takes queries.
func (c *Cluster) postgresHealth(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, postgresDSN(a))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var v string
		if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
			return err
		}
		c.setVersion(impls.Postgres, "postgresql "+strings.Fields(v)[0])
		return nil
	}
}

// reachable says why uid (in group gid) cannot enter dir, or nil: every
// directory on the way must let it search (x) as owner, group or other.
// initdb's own error, "could not access directory: Permission denied",
// names the data directory, not the private TMPDIR above it that is the cause.
func reachable(dir string, uid, gid int) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("cannot see %s: %w", d, err)
		}
		mode := st.Mode().Perm()
		ok := mode&0o001 != 0
		if sys, isUnix := st.Sys().(*syscall.Stat_t); isUnix {
			ok = ok || (int(sys.Uid) == uid && mode&0o100 != 0) || (int(sys.Gid) == gid && mode&0o010 != 0)
		}
		if !ok {
			return fmt.Errorf("cannot enter %s (mode %04o)", d, mode)
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// ---- etcd ----

func (c *Cluster) startEtcd(ctx context.Context, size int) ([]*Node, error) {
	return c.startEnsemble(ctx, size, 2, func(i int, ports []int) (*Node, error) {
		var initial []string
		for j := 0; j < size; j++ { // client, peer port per node
			initial = append(initial, fmt.Sprintf("etcd-%d=http://127.0.0.1:%d", j+1, ports[2*j+1]))
		}
		name := fmt.Sprintf("etcd-%d", i+1)
		dir := filepath.Join(c.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		a := addr(ports[2*i])
		return &Node{
			Name: name, Server: impls.Etcd, direct: a,
			proc: &process{
				name: name, dir: dir, logPath: filepath.Join(dir, "etcd.log"), spawn: c.spawn,
				// Its orderly stop waits seconds to hand leadership to peers
				// that are stopping too; the data dir is deleted anyway.
				stopSig: syscall.SIGKILL,
				argv: []string{"etcd", "--name", name, "--data-dir", filepath.Join(dir, "data"),
					"--listen-client-urls", client, "--advertise-client-urls", client,
					"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
					"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
					"--initial-cluster-token", "locklab", "--heartbeat-interval", "50", "--election-timeout", "500"},
			},
			health: c.etcdHealth(client),
		}, nil
	})
}

// etcdHealth: the member at client (its URL) reports itself healthy.
func (c *Cluster) etcdHealth(client string) func(context.Context) error {
	return func(ctx context.Context) error {
		var health struct{ Health string }
		if err := getJSON(ctx, client+"/health", &health); err != nil {
			return err
		}
		if health.Health != "true" {
			return fmt.Errorf("health %q", health.Health)
		}
		var v struct{ Etcdserver string }
		if err := getJSON(ctx, client+"/version", &v); err == nil {
			c.setVersion(impls.Etcd, "etcd "+v.Etcdserver)
		}
		return nil
	}
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

package cluster

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/locklab/locklab/impls"
)

// ---- the kind ----

// postgresKind: one PostgreSQL server.
func postgresKind() Kind {
	return Kind{
		Server:      impls.Postgres,
		About:       "one PostgreSQL server",
		StartCost:   3 * time.Second,
		Nodes:       1,
		Binaries:    []Binary{{pgBin + "/postgres", "postgresql"}, {pgBin + "/initdb", "postgresql"}},
		PublicImage: "postgres:15",
		LocalImage:  "locklab/postgres:bookworm",
		NoFakeTime:  "PostgreSQL is not run under libfaketime",
		nodeName:    func(int) string { return "postgres-0" },
		startLocal: func(ctx context.Context, c *Cluster, _ LocalConfig, _ int) ([]*Node, error) {
			n, err := c.startPostgres(ctx)
			return []*Node{n}, err
		},
		containers: func(*Cluster, LocalConfig, int) []containerSpec {
			return []containerSpec{{name: "postgres-0", server: impls.Postgres, port: postgresPort,
				entrypoint: []string{"sh", "-c", postgresScript}}}
		},
		health: func(c *Cluster, a string) func(context.Context) error { return c.postgresHealth(a) },
		// An SSLRequest: the server answers one byte, S or N.
		speaks: func(ctx context.Context, a string) error {
			return answers(ctx, a, []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f})
		},
		endpoint: withDSN(postgresDSN),
		external: &externalForm{example: "postgres://postgres:pw@127.0.0.1:5432/locklab?sslmode=disable (a URL)", parse: parsePostgresURL},
		compose: func(w *composeWriter) {
			w.service(composeService{name: "postgres-0", server: impls.Postgres, shell: postgresScript, hostPort: composePostgresPort, port: 5432})
		},
	}
}

// postgresPort is the client port inside its container;
// composePostgresPort the one compose.yaml publishes on 127.0.0.1.
const (
	postgresPort        = "5432/tcp"
	composePostgresPort = 15432
)

// parsePostgresURL reads the user's URL: its server's address, and the URL
// that reaches it through a proxy at another address.
func parsePostgresURL(dsn string) (string, func(proxyAddr string) string, error) {
	a, err := postgresURLAddr(dsn)
	if err != nil {
		return "", nil, err
	}
	return a, func(proxyAddr string) string {
		u, _ := url.Parse(dsn)
		u.Host = proxyAddr
		return u.String()
	}, nil
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

// ---- the server ----

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

// postgresScript: trust from any host of the container's network (the
// host's connections arrive through Docker's bridge).
const postgresScript = `set -e
bin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
d=/var/lib/locklab-pg
if [ ! -f "$d/PG_VERSION" ]; then
  mkdir -p "$d" && chown postgres "$d"
  runuser -u postgres -- "$bin/initdb" -D "$d" -U postgres --auth=trust -E UTF8 --no-sync >/tmp/initdb.log 2>&1 || { cat /tmp/initdb.log; exit 1; }
  echo 'host all all 0.0.0.0/0 trust' >>"$d/pg_hba.conf"
fi
exec runuser -u postgres -- "$bin/postgres" -D "$d" -p 5432 -c listen_addresses='*' -c unix_socket_directories= \
  -c max_connections=500 -c shared_buffers=64MB`

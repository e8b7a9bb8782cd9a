package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/locklab/locklab/impls"
)

// ---- the kind ----

// mariadbKind: one MariaDB server (impls.MySQL: the approaches speak
// MySQL's protocol and SQL).
func mariadbKind() Kind {
	return Kind{
		Server:      impls.MySQL,
		About:       "one MariaDB server",
		StartCost:   3 * time.Second,
		Nodes:       1,
		Binaries:    []Binary{{"mariadbd", "mariadb-server"}, {"mariadb-install-db", "mariadb-server"}},
		PublicImage: "mariadb:10.11",
		LocalImage:  "locklab/mariadb:bookworm",
		nodeName:    func(int) string { return "mysql-0" },
		startLocal: func(ctx context.Context, c *Cluster, cfg LocalConfig, _ int) ([]*Node, error) {
			n, err := c.startMariaDB(ctx)
			if err == nil && cfg.FakeTime {
				err = restartUnderFakeTime(ctx, []*Node{n})
			}
			return []*Node{n}, err
		},
		containers: func(_ *Cluster, cfg LocalConfig, _ int) []containerSpec {
			return []containerSpec{{name: "mysql-0", server: impls.MySQL, port: mariadbPort, fakeTime: cfg.FakeTime,
				entrypoint: []string{"sh", "-c", mariadbScript}}}
		},
		health: func(c *Cluster, a string) func(context.Context) error {
			// Docker's port proxy accepts before the server listens and then
			// hangs up, which the MySQL driver logs as "unexpected EOF" on
			// every try: wait for the server's greeting first.
			sql := c.mariadbHealth(a)
			return func(ctx context.Context) error {
				if err := answers(ctx, a, nil); err != nil {
					return err
				}
				return sql(ctx)
			}
		},
		speaks:   func(ctx context.Context, a string) error { return answers(ctx, a, nil) }, // MariaDB speaks first
		endpoint: withDSN(mysqlDSN),
		external: &externalForm{example: "root:pw@tcp(127.0.0.1:3306)/locklab (a go-sql-driver DSN)", parse: parseMySQLDSN},
		compose: func(w *composeWriter) {
			w.service(composeService{name: "mysql-0", server: impls.MySQL, shell: mariadbScript, hostPort: composeMariaDBPort, port: 3306})
		},
	}
}

// mariadbPort is the client port inside its container; composeMariaDBPort
// the one compose.yaml publishes on 127.0.0.1.
const (
	mariadbPort        = "3306/tcp"
	composeMariaDBPort = 13306
)

// parseMySQLDSN reads the user's DSN: its server's address, and the DSN
// that reaches it through a proxy at another address.
func parseMySQLDSN(dsn string) (string, func(proxyAddr string) string, error) {
	m, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("mysql DSN: %w", err)
	}
	if m.Net != "tcp" {
		return "", nil, fmt.Errorf("mysql DSN: network %q, want tcp", m.Net)
	}
	return m.Addr, func(proxyAddr string) string {
		m2 := m.Clone()
		m2.Addr = proxyAddr
		m2.InterpolateParams = true
		return m2.FormatDSN()
	}, nil
}

// ---- the server ----

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
	if err := installMariaDB(ctx, name, data); err != nil {
		return nil, err
	}
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

// installMariaDB creates a MariaDB data directory with a root that logs
// in without a password. mariadb-install-db bootstraps a server of its
// own, which fails now and then when several install at once on a loaded
// machine (the five MariaDB nodes of a full matrix): it is tried up to
// three times on a fresh directory, and its error names the line that
// says why, not its closing advice.
func installMariaDB(ctx context.Context, name, data string) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
		}
		if rmErr := os.RemoveAll(data); rmErr != nil {
			return fmt.Errorf("%s: %w", name, rmErr)
		}
		install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data,
			"--auth-root-authentication-method=normal", "--skip-test-db", "--user=root")
		out, runErr := install.CombinedOutput()
		if runErr == nil {
			return nil
		}
		err = fmt.Errorf("%s: mariadb-install-db (%d attempts): %w: %s", name, attempt+1, runErr, installError(string(out)))
	}
	return err
}

// installError is the line of mariadb-install-db's output that says what
// went wrong: its last ERROR line, else its last line before the advice
// that follows a failure.
func installError(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "ERROR") {
			return strings.TrimSpace(lines[i])
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "Installation of system tables failed") && i > 0 {
			return strings.TrimSpace(lines[i-1])
		}
	}
	return lastLine(out)
}

// mariadbHealth: the server at a takes root's queries; it also creates the
// lock tables' database.
func (c *Cluster) mariadbHealth(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		db, err := rootDB(a)
		if err != nil {
			return err
		}
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

// rootDB reaches the server at a as root, with no database chosen.
func rootDB(a string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", a
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// mariadbScript: root may connect from the host (through Docker's bridge,
// not from localhost), as the embedded server lets it. An init file takes
// one statement per line. A failed install repeats the bootstrap's last
// lines before its own: a start error keeps the log's last three, which
// are otherwise mariadb-install-db's advice ("... https://mariadb.org/jira").
const mariadbScript = `set -e
d=/var/lib/locklab-mysql
if [ ! -d "$d/mysql" ]; then
  mkdir -p "$d"
  mariadb-install-db --no-defaults --datadir="$d" --auth-root-authentication-method=normal --skip-test-db --user=root >/tmp/install.log 2>&1 || { cat /tmp/install.log; sed '/^Installation of system tables failed/,$d' /tmp/install.log | grep . | tail -3; exit 1; }
fi
printf "%s\n" "CREATE USER IF NOT EXISTS root@'%';" "GRANT ALL ON *.* TO root@'%' WITH GRANT OPTION;" \
  "CREATE DATABASE IF NOT EXISTS locklab;" >/tmp/init.sql
exec mariadbd --no-defaults --datadir="$d" --socket=/tmp/mariadbd.sock --port=3306 --bind-address=0.0.0.0 --user=root \
  --skip-log-bin --skip-name-resolve --performance-schema=OFF --max-connections=2000 --innodb-buffer-pool-size=128M \
  --init-file=/tmp/init.sql`

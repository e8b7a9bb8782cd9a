package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/tcpproxy"
)

// The replicated MariaDB topologies (impls.MySQLReplicated and
// impls.MySQLSemiSync): two MariaDB servers on 127.0.0.1, each behind its
// proxy, one the primary and the other its replica (GTID, row-based,
// log_slave_updates), as the founding article proposes to take away the
// database's single point of failure ("run two databases synchronised and
// switch to the standby when the primary dies"). The semi-synchronous one
// runs MariaDB's built-in rpl_semi_sync_master with the AFTER_SYNC wait
// point: a commit waits until the replica has the transaction, for at most
// rpl_semi_sync_master_timeout (10 s, MariaDB's default), after which the
// primary silently goes on asynchronously.
//
// Nothing fails over on its own (no MHA, no orchestrator): the db-failover
// fault promotes the replica. Clients are given every node and write to
// the one whose read_only is off, as ProxySQL routes writes; every node
// starts read-only and the topology's rule (settle, run by each health
// check) decides who leads:
//   - a node that replicates is a replica;
//   - a read-only node that does not, while the other leads, is a primary
//     left behind by a failover (or a fresh replica): it becomes a replica
//     of the other, its lock tables dropped and replayed from the other's
//     binary log, so what it acknowledged and the other never got is gone,
//     as in every MariaDB failover;
//   - otherwise it leads (the first node wins a tie; while the pair
//     starts, only the first leads, whether or not it answers).
//
// The replica replicates through a proxy of its own in front of its
// primary (replicationLink): a fault there holds replication back while
// clients still reach the primary.

// mariadbReplicatedKind: the topology with asynchronous replication.
func mariadbReplicatedKind() Kind {
	return replicatedMariaDBKind(impls.MySQLReplicated, "a MariaDB primary and its asynchronous replica", false)
}

// mariadbSemiSyncKind: the topology with semi-synchronous replication.
func mariadbSemiSyncKind() Kind {
	return replicatedMariaDBKind(impls.MySQLSemiSync,
		"a MariaDB primary and its semi-synchronous replica (AFTER_SYNC, 10 s timeout)", true)
}

func replicatedMariaDBKind(s impls.Server, about string, semiSync bool) Kind {
	start := func(ctx context.Context, c *Cluster, _ LocalConfig, _ int) ([]*Node, error) {
		return c.startReplicatedMariaDB(ctx, s, semiSync)
	}
	return Kind{
		Server:      s,
		About:       about,
		StartCost:   3 * time.Second,
		Nodes:       1,
		OnRequest:   true,
		hostNetwork: true,
		Binaries:    []Binary{{"mariadbd", "mariadb-server"}, {"mariadb-install-db", "mariadb-server"}},
		ImageFrom:   impls.MySQL,
		NoFakeTime:  "the replicated MariaDB topology is not run under libfaketime",
		nodeName:    func(i int) string { return replicatedNodeName(s, i) },
		startLocal:  start,
		startDocker: start,
		endpoint:    withDSN(mysqlDSN),
		role:        replicatedMariaDBRole,
	}
}

// replicatedNodeName names the topology's i-th node (0-based). Names say
// nothing of roles: a failover swaps them.
func replicatedNodeName(s impls.Server, i int) string { return fmt.Sprintf("%s-%d", s, i+1) }

// IsReplicatedMariaDB says whether s is one of the replicated MariaDB
// topologies.
func IsReplicatedMariaDB(s impls.Server) bool {
	return s == impls.MySQLReplicated || s == impls.MySQLSemiSync
}

// mariadbPair is one topology: its two nodes and its replication mode.
type mariadbPair struct {
	server   impls.Server
	semiSync bool
	mu       sync.Mutex
	nodes    [2]*Node
	started  bool // both nodes were healthy once
}

// other is the node of the pair that is not n (nil before it exists).
func (p *mariadbPair) other(n *Node) *Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes[0] == n {
		return p.nodes[1]
	}
	return p.nodes[0]
}

func (p *mariadbPair) first(n *Node) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nodes[0] == n
}

func (p *mariadbPair) isStarted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// startReplicatedMariaDB starts the first node, which leads, then the
// second, which becomes its replica; healthy when replication runs.
func (c *Cluster) startReplicatedMariaDB(ctx context.Context, s impls.Server, semiSync bool) ([]*Node, error) {
	p := &mariadbPair{server: s, semiSync: semiSync}
	var nodes []*Node
	for i := range p.nodes {
		n, err := c.startReplicatedNode(ctx, p, i)
		if n != nil {
			nodes = append(nodes, n)
		}
		if err != nil {
			return nodes, err
		}
	}
	p.mu.Lock()
	p.started = true
	p.mu.Unlock()
	return nodes, nil
}

// startReplicatedNode starts the topology's i-th node; one whose port was
// taken between its choice and the server's bind ("in use": other servers
// start on this machine meanwhile) is started again on another.
func (c *Cluster) startReplicatedNode(ctx context.Context, p *mariadbPair, i int) (*Node, error) {
	for attempt := 1; ; attempt++ {
		n, err := c.tryReplicatedNode(ctx, p, i)
		if err == nil || n == nil || attempt == 3 || !strings.Contains(strings.ToLower(err.Error()), "in use") {
			return n, err
		}
		if n.ctr != nil {
			n.ctr.remove(ctx)
		}
		if n.proc != nil {
			n.proc.stop(0)
		}
		n.proxy.Stop()
	}
}

func (c *Cluster) tryReplicatedNode(ctx context.Context, p *mariadbPair, i int) (*Node, error) {
	name := replicatedNodeName(p.server, i)
	n, dir, port, err := c.topologyNode(name, p.server)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	n.health = func(ctx context.Context) error { return c.settle(ctx, p, n) }
	p.mu.Lock()
	p.nodes[i] = n
	p.mu.Unlock()
	// Every node starts read-only: settle decides who leads. The server
	// ids differ; a rejoin gives a node a fresh one (see rejoin).
	args := []string{"mariadbd", "--no-defaults", "--datadir=" + data, "--socket=" + mariadbSocket,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--user=root",
		"--skip-name-resolve", "--performance-schema=OFF", "--max-connections=2000", "--innodb-buffer-pool-size=128M",
		"--server-id=" + strconv.Itoa(i+1), "--log-bin=binlog", "--log-slave-updates=ON", "--binlog-format=ROW",
		"--read-only=ON", "--report-host=127.0.0.1", "--report-port=" + strconv.Itoa(port)}
	if p.semiSync {
		// Every node acknowledges as a replica; only the one that leads
		// waits as a primary (a replica that also waited would hold its
		// own applier up for the timeout on every replicated commit, as
		// it has no replica of its own to acknowledge).
		args = append(args, "--rpl-semi-sync-slave-enabled=ON", "--rpl-semi-sync-master-wait-point=AFTER_SYNC")
	}
	if c.docker != nil {
		// The data directory is made inside the container, on the host's
		// directory mounted at the same path.
		script := fmt.Sprintf(`set -e; [ -d %q ] || mariadb-install-db --no-defaults --datadir=%q `+
			`--auth-root-authentication-method=normal --skip-test-db --user=root >%q 2>&1; exec %s`,
			filepath.Join(data, "mysql"), data, filepath.Join(dir, "install.log"), strings.Join(args, " "))
		ctr, err := c.docker.createOnHostFrom(ctx, impls.MySQL, name, []string{"sh", "-c", script}, dir)
		n.ctr = ctr
		if err != nil {
			return n, fmt.Errorf("%s: %w", name, err)
		}
	} else {
		if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
			if err := installMariaDB(ctx, name, data); err != nil {
				return n, err
			}
		}
		n.proc = &process{name: name, dir: dir, logPath: filepath.Join(dir, "mariadbd.log"), spawn: c.spawn, argv: args, ports: []int{port}}
		if err := n.proc.start(); err != nil {
			return n, err
		}
	}
	return n, waitHealthy(ctx, n)
}

// topologyNode begins a node that a topology starts itself (the
// Sentinels', the replicated MariaDB's): its directory, a free port, and
// its proxy in front of it.
func (c *Cluster) topologyNode(name string, s impls.Server) (n *Node, dir string, port int, err error) {
	dir = filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", 0, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, "", 0, err
	}
	direct := addr(ports[0])
	proxy, err := startProxy(name, direct)
	if err != nil {
		return nil, "", 0, err
	}
	return &Node{Name: name, Server: s, direct: direct, proxy: proxy}, dir, ports[0], nil
}

// replState is what a node of the topology says of itself.
type replState struct {
	readOnly bool
	// replica: it has a primary configured (SHOW SLAVE STATUS has a row),
	// with the state of its two threads and its last error.
	replica          bool
	io, sql, lastErr string
	ioPos            string // Gtid_IO_Pos: what it received
}

// leads: it takes writes and replicates from nobody.
func (s replState) leads() bool { return !s.replica && !s.readOnly }

// replStateOf asks the server on conn.
func replStateOf(ctx context.Context, q querier) (replState, error) {
	var st replState
	if err := q.QueryRowContext(ctx, "SELECT @@global.read_only").Scan(&st.readOnly); err != nil {
		return st, err
	}
	row, err := showRow(ctx, q, "SHOW SLAVE STATUS")
	if err != nil {
		return st, err
	}
	if row != nil {
		st.replica = true
		st.io, st.sql, st.ioPos = row["Slave_IO_Running"], row["Slave_SQL_Running"], row["Gtid_IO_Pos"]
		st.lastErr = strings.TrimSpace(row["Last_IO_Error"] + " " + row["Last_SQL_Error"])
	}
	return st, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// showRow reads the first row of a SHOW statement by column name; nil
// when it has none.
func showRow(ctx context.Context, q querier, stmt string) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, stmt)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(cols))
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out, rows.Err()
}

// rootConn is one connection to the server at a as root, for statements
// that must share a session (SET sql_log_bin); close both when done.
func rootConn(ctx context.Context, a string) (*sql.DB, *sql.Conn, error) {
	db, err := rootDB(a)
	if err != nil {
		return nil, nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, conn, nil
}

// settle is the health check of a node of the topology, and the rule that
// gives it its place (see the top of this file): healthy once it leads
// alone, or replicates with both threads running.
func (c *Cluster) settle(ctx context.Context, p *mariadbPair, n *Node) error {
	db, conn, err := rootConn(ctx, n.direct)
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	var v string
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return err
	}
	c.setVersion(p.server, "mariadb "+v)
	st, err := replStateOf(ctx, conn)
	if err != nil {
		return err
	}
	other := p.other(n)
	var ost replState
	oerr := errors.New("not started")
	if other != nil {
		ost, oerr = stateAt(ctx, other.direct)
	}
	switch {
	case st.replica:
		if st.io == "No" && st.sql == "No" && oerr == nil && ost.leads() {
			// Both threads stopped while the other node leads: a rejoin
			// cut short between CHANGE MASTER and START SLAVE (seen in
			// CI's loaded run) would otherwise leave it so for ever.
			if _, err := conn.ExecContext(ctx, "START SLAVE"); err != nil {
				return fmt.Errorf("%s: restart replication from %s: %w", n.Name, other.Name, err)
			}
			return fmt.Errorf("%s: replication from %s restarting", n.Name, other.Name)
		}
		if st.io != "Yes" || st.sql != "Yes" {
			return fmt.Errorf("%s: replication not running (IO thread %s, SQL thread %s) %s", n.Name, st.io, st.sql, st.lastErr)
		}
		return nil
	case st.leads():
		if oerr == nil && ost.leads() {
			return fmt.Errorf("%s and %s both take writes", n.Name, other.Name)
		}
		// A lead cut short by the health check's deadline, after it took
		// writes and before the database was made (seen on a starved
		// machine: every client then met "Unknown database").
		return ensureDatabase(ctx, conn)
	case oerr == nil && ost.leads():
		// Not under the health check's one-second deadline: a rejoin cut
		// between its statements leaves a half-made replica.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := rejoin(rctx, conn, c.replicationLink(other)); err != nil {
			return fmt.Errorf("%s: replicate from %s: %w", n.Name, other.Name, err)
		}
		return fmt.Errorf("%s: replication from %s starting", n.Name, other.Name)
	case oerr == nil && !ost.replica && !p.first(n):
		return fmt.Errorf("%s: waiting for %s to lead", n.Name, other.Name)
	case oerr != nil && other != nil && !p.first(n) && !p.isStarted():
		// At the start the first node leads: one that did not answer in
		// the health check's second (a starved machine) has not stopped
		// leading, and the second leading too would make two primaries,
		// each refusing the other for good.
		return fmt.Errorf("%s: waiting for %s, which leads: %w", n.Name, other.Name, oerr)
	default:
		return lead(ctx, conn, p.semiSync)
	}
}

// stateAt asks the server at a.
func stateAt(ctx context.Context, a string) (replState, error) {
	db, err := rootDB(a)
	if err != nil {
		return replState{}, err
	}
	defer db.Close()
	return replStateOf(ctx, db)
}

// lead makes the node on conn the primary: it takes writes, waits for its
// replica's receipt if semi-synchronous, and has the lock tables' database.
func lead(ctx context.Context, conn querier, semiSync bool) error {
	stmts := []string{"SET GLOBAL read_only = OFF"}
	if semiSync {
		stmts = append(stmts, "SET GLOBAL rpl_semi_sync_master_enabled = ON")
	}
	if err := execAll(ctx, conn, stmts...); err != nil {
		return err
	}
	return ensureDatabase(ctx, conn)
}

// ensureDatabase makes the lock tables' database on the primary on conn.
func ensureDatabase(ctx context.Context, conn querier) error {
	// Created only when missing: every statement is replicated, and a
	// semi-synchronous primary cut off its replica would hold a health
	// check up for the timeout.
	var name string
	err := conn.QueryRowContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", MySQLDatabase).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+MySQLDatabase)
	}
	return err
}

// rejoin makes the node on conn a replica of the primary behind link:
// read-only, its clients' sessions ended (a client still connected would
// write to it), its lock tables dropped without logging and replayed from
// the primary's binary log from the start, under a fresh server id (a
// server skips events that carry its own id, and this node may have
// written some of those it is to replay when it led).
func rejoin(ctx context.Context, conn querier, link string) error {
	if err := execAll(ctx, conn, "SET GLOBAL read_only = ON", "SET GLOBAL rpl_semi_sync_master_enabled = OFF"); err != nil {
		return err
	}
	if err := killClients(ctx, conn); err != nil {
		return err
	}
	return execAll(ctx, conn,
		"STOP SLAVE",
		"SET SESSION sql_log_bin = 0",
		"DROP DATABASE IF EXISTS "+MySQLDatabase,
		"SET SESSION sql_log_bin = 1",
		"RESET MASTER",
		"SET GLOBAL gtid_slave_pos = ''",
		fmt.Sprintf("SET GLOBAL server_id = %d", 1000+rand.IntN(1<<30)),
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', "+
			"MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1", portOf(link)),
		"START SLAVE")
}

// killClients ends every client session on the server but this one's.
func killClients(ctx context.Context, conn querier) error {
	rows, err := conn.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST "+
		"WHERE ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler') AND COMMAND NOT IN ('Binlog Dump', 'Daemon')")
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		// A session that ended meanwhile is no error (1094: unknown thread).
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil && !strings.Contains(err.Error(), "1094") {
			return err
		}
	}
	return rows.Err()
}

func execAll(ctx context.Context, conn querier, stmts ...string) error {
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// replicationLink is the address of the proxy a replica of primary
// replicates through, made on first use. It lives among the cluster's
// named links, which Close stops.
func (c *Cluster) replicationLink(primary *Node) string {
	p, err := c.links.get(replicationLinkName(primary), primary.direct)
	if err != nil {
		return primary.direct // replicate directly rather than not at all
	}
	return p.Listen
}

func replicationLinkName(primary *Node) string { return primary.Name + " replication" }

// ReplicationLinkOf is the proxy the replicas of a node of a replicated
// MariaDB topology replicate through, or nil (none has yet): a fault on it
// holds replication back while clients still reach the primary.
func (c *Cluster) ReplicationLinkOf(primary *Node) *tcpproxy.Proxy {
	return c.links.lookup(replicationLinkName(primary))
}

// replicatedMariaDBRole: the node that takes writes and replicates from
// nobody leads; a replica, or a node waiting to become one, follows.
func replicatedMariaDBRole(ctx context.Context, n *Node) (string, error) {
	st, err := stateAt(ctx, n.direct)
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	if st.leads() {
		return RoleLeader, nil
	}
	return RoleFollower, nil
}

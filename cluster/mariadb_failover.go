package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/tcpproxy"
)

// What the db-failover fault needs of a replicated MariaDB topology's
// primary. As for the Sentinel topology, a Node knows only itself, so each
// step asks the servers: the primary names its replicas (SHOW SLAVE HOSTS,
// at the addresses they report), each replica says where it replicates
// from and how far it got. The failover is the fault's to make (nothing
// here fails over on its own): it promotes the replica as MHA or
// orchestrator would, and clients follow the node that takes writes.

// CanDBFailover says why n cannot be failed over, or nil: only a node of a
// replicated MariaDB topology that locklab runs.
func (n *Node) CanDBFailover() error {
	if !IsReplicatedMariaDB(n.Server) {
		return fmt.Errorf("%s is not a node of a replicated MariaDB topology", n.Name)
	}
	if !n.Controllable() {
		return fmt.Errorf("%s: %w", n.Name, ErrUnsupported)
	}
	return nil
}

// DBReplicationCut is what the db-failover fault keeps of a held (or
// observed) replication (chaos.DBReplicationCut: the same type literal, so
// Node satisfies chaos.DBFailoverNode without this package importing
// chaos).
type DBReplicationCut = interface {
	Promote(ctx context.Context, within time.Duration) error
	Rejoin(ctx context.Context, within time.Duration) error
	Reopen(ctx context.Context) error
}

// HeldDBReplication is replication from one MariaDB primary held back:
// each replica was pointed at a proxy that passes nothing.
type HeldDBReplication struct {
	primary *Node
	// Replicas are the replicas' own addresses, as they report them.
	Replicas []string
	semiSync bool
	proxy    *tcpproxy.Proxy
	// prev is where each held replica replicated from, to point it back
	// if no failover happens.
	prev map[string]int
	// promoted is the replica Promote promoted ("": none yet).
	promoted string
}

// CutDBReplication finds the replicas of the primary n and waits until
// each has every transaction n has logged; with hold it then points each
// at a proxy of n that passes nothing (stopping its threads, so n sees its
// replica go, as across a cut link that TCP gave up on), so that whatever
// n commits from now on certainly never reaches them. A semi-synchronous
// n then waits for each commit until rpl_semi_sync_master_timeout, and
// silently goes on without its replica. Without hold it only notes them
// (the control case).
func (n *Node) CutDBReplication(ctx context.Context, hold bool) (DBReplicationCut, error) {
	if err := n.CanDBFailover(); err != nil {
		return nil, err
	}
	db, err := rootDB(n.direct)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st, err := replStateOf(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("replication of %s: %w", n.Name, err)
	}
	if !st.leads() {
		return nil, fmt.Errorf("%s is not the primary (read_only %v, replicating %v)", n.Name, st.readOnly, st.replica)
	}
	h := &HeldDBReplication{primary: n, semiSync: n.Server == impls.MySQLSemiSync, prev: map[string]int{}}
	rows, err := db.QueryContext(ctx, "SHOW SLAVE HOSTS")
	if err != nil {
		return nil, fmt.Errorf("replicas of %s: %w", n.Name, err)
	}
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		var host, port string
		for i, c := range cols {
			switch c {
			case "Host":
				vals[i] = &host
			case "Port":
				vals[i] = &port
			default:
				vals[i] = new(any)
			}
		}
		if err := rows.Scan(vals...); err != nil {
			rows.Close()
			return nil, err
		}
		h.Replicas = append(h.Replicas, host+":"+port)
	}
	rows.Close()
	if len(h.Replicas) == 0 {
		return nil, fmt.Errorf("%s has no replica to fail over to", n.Name)
	}
	var pos string
	if err := db.QueryRowContext(ctx, "SELECT @@global.gtid_binlog_pos").Scan(&pos); err != nil {
		return nil, err
	}
	for _, r := range h.Replicas {
		if err := waitGTID(ctx, r, pos, 5*time.Second); err != nil {
			return nil, fmt.Errorf("replicas of %s: %w", n.Name, err)
		}
	}
	if !hold {
		return h, nil
	}
	if h.proxy, err = newHeldProxy(n.Name+" held replication", n.direct); err != nil {
		return nil, err
	}
	for _, r := range h.Replicas {
		if err := h.pointAt(ctx, r, portOf(h.proxy.Listen), true); err != nil {
			return nil, errors.Join(fmt.Errorf("hold replication to %s: %w", r, err), h.Reopen(ctx))
		}
	}
	return h, nil
}

// pointAt makes replica r replicate from the proxy at port, noting where
// it replicated from before when note is set.
func (h *HeldDBReplication) pointAt(ctx context.Context, r string, port int, note bool) error {
	db, conn, err := rootConn(ctx, r)
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	if note {
		row, err := showRow(ctx, conn, "SHOW SLAVE STATUS")
		if err != nil {
			return err
		}
		if row == nil {
			return fmt.Errorf("%s does not replicate", r)
		}
		h.prev[r] = portOf(row["Master_Host"] + ":" + row["Master_Port"])
	}
	return execAll(ctx, conn, "STOP SLAVE",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d", port), "START SLAVE")
}

// waitGTID waits up to within until the replica at r has applied every
// transaction of the GTID position pos.
func waitGTID(ctx context.Context, r, pos string, within time.Duration) error {
	db, err := rootDB(r)
	if err != nil {
		return err
	}
	defer db.Close()
	var got int
	if err := db.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, ?)", pos, within.Seconds()).Scan(&got); err != nil {
		return fmt.Errorf("%s: wait for GTID %s: %w", r, pos, err)
	}
	if got != 0 {
		return fmt.Errorf("%s did not reach GTID %s within %v", r, pos, within)
	}
	return nil
}

// Promote makes the first replica the primary, as a failover manager
// would once the primary is gone: it applies what it had received (a
// promoted replica that skipped its relay log would lose more), stops
// replicating, forgets its primary, and takes writes (waiting for its own
// replica's receipt, if semi-synchronous: until one is back, each commit
// waits the timeout). Clients follow it: they write to the node whose
// read_only is off.
func (h *HeldDBReplication) Promote(ctx context.Context, within time.Duration) error {
	r := h.Replicas[0]
	err := poll(ctx, within, func(ctx context.Context) error {
		db, conn, err := rootConn(ctx, r)
		if err != nil {
			return err
		}
		defer db.Close()
		defer conn.Close()
		st, err := replStateOf(ctx, conn)
		if err != nil {
			return err
		}
		if st.replica && st.ioPos != "" {
			var got int
			if err := conn.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 0.5)", st.ioPos).Scan(&got); err != nil || got != 0 {
				return fmt.Errorf("%s has not applied what it received (%s) yet", r, st.ioPos)
			}
		}
		stmts := []string{"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF"}
		if h.semiSync {
			stmts = append(stmts, "SET GLOBAL rpl_semi_sync_master_enabled = ON")
		}
		return execAll(ctx, conn, stmts...)
	})
	if err != nil {
		return fmt.Errorf("promote %s: %w", r, err)
	}
	h.promoted = r
	return nil
}

// Rejoin waits up to within until the old primary (restarted or resumed)
// is a replica of the promoted one and has caught up: the topology is
// whole again, roles swapped. A resumed primary still takes writes: it is
// made read-only first, which tells it to follow (see settle). Without a
// promotion (the failover was rolled back) it waits until the old primary
// leads again.
func (h *HeldDBReplication) Rejoin(ctx context.Context, within time.Duration) error {
	n := h.primary
	if h.promoted != "" {
		err := poll(ctx, within, func(ctx context.Context) error {
			db, err := rootDB(n.direct)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.ExecContext(ctx, "SET GLOBAL read_only = ON")
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if err := waitHealthy(wctx, n); err != nil {
		return err
	}
	if h.promoted == "" {
		return nil
	}
	db, err := rootDB(h.promoted)
	if err != nil {
		return err
	}
	defer db.Close()
	var pos string
	if err := db.QueryRowContext(ctx, "SELECT @@global.gtid_binlog_pos").Scan(&pos); err != nil {
		return fmt.Errorf("%s: %w", h.promoted, err)
	}
	return waitGTID(ctx, n.direct, pos, within)
}

// Reopen ends the hold: a replica that still replicates from the held
// proxy (no failover happened) is pointed back where it replicated from;
// a promoted one is left alone.
func (h *HeldDBReplication) Reopen(ctx context.Context) error {
	var errs []error
	for r, prev := range h.prev {
		st, err := stateAt(ctx, r)
		if err != nil || !st.replica {
			continue // promoted, or gone: nothing to point back
		}
		if err := h.pointAt(ctx, r, prev, false); err != nil {
			errs = append(errs, fmt.Errorf("point %s back at port %d: %w", r, prev, err))
		}
	}
	if h.proxy != nil {
		h.proxy.Stop()
	}
	return errors.Join(errs...)
}

// String names the replicas, for errors.
func (h *HeldDBReplication) String() string { return strings.Join(h.Replicas, ", ") }

// CanDBFailover: as Node.CanDBFailover, for a node before it starts.
func (p PlannedNode) CanDBFailover() error {
	if !IsReplicatedMariaDB(p.kind.Server) {
		return fmt.Errorf("a %s node is not a node of a replicated MariaDB topology", p.kind.Server)
	}
	return nil
}

func (PlannedNode) CutDBReplication(context.Context, bool) (DBReplicationCut, error) {
	return nil, errPlanned
}

package chaos

import (
	"context"
)

// DBFailover fails a replicated MariaDB topology (mysql-replicated,
// mysql-semisync) over to its replica, as the founding article proposes
// ("run two databases synchronised and switch to the standby when the
// primary dies"), with the latest writes certainly kept from the replica
// (FAULTS.md F8, for a database): a lock row or a grant the primary
// acknowledged after the cut is unknown to the new primary.
//
// It is the failover fault's sequence, except that nothing watches the
// topology, so the fault itself does what a failover manager (MHA,
// orchestrator) would: hold back replication from the target (the current
// primary: {node: leader, server: mysql-replicated}) to its replica, wait
// `after` with the primary still serving (a semi-synchronous primary's
// commits wait for the replica's receipt until rpl_semi_sync_master_timeout,
// then go on without it), kill it (mode: kill) or stop it (mode: pause),
// promote the replica once it has applied what it received (it stops
// replicating and takes writes), and clients follow it: they write to the
// node whose read_only is off. The heal brings the old primary back
// (restarted; or resumed and made read-only, its clients' sessions ended),
// makes it a replica of the new primary (its lock tables replayed from the
// new primary's binary log: what only it had is gone) and ends the hold.
//
// Options as failover's: mode (kill, pause), replication (hold, keep:
// the control case), after, within (default 45s).
type DBFailover struct {
	Mode        string   `yaml:"mode"`
	Replication string   `yaml:"replication"`
	After       Duration `yaml:"after"`
	Within      Duration `yaml:"within"`
}

// DBFailoverNode is what the fault needs of a node (cluster.Node has it).
type DBFailoverNode interface {
	Process
	Restarter
	CanDBFailover() error
	// CutDBReplication holds back replication from the node to its
	// replicas (hold), or only notes them (the control case).
	CutDBReplication(ctx context.Context, hold bool) (DBReplicationCut, error)
}

// DBReplicationCut is one held (or observed) replication of a replicated
// MariaDB topology, with the failover's steps: an alias of a type literal,
// so cluster declares the same type without importing chaos.
type DBReplicationCut = failoverSteps

func (DBFailover) Kind() string   { return "db-failover" }
func (DBFailover) Threat() string { return ThreatFailover }

func (DBFailover) Ranges() Ranges { return DefaultRanges() }

func (f DBFailover) Validate() error { return Failover(f).validate(f.Kind()) }

func (f DBFailover) Available(t Target) error {
	_, err := f.node(t)
	return err
}

func (f DBFailover) node(t Target) (DBFailoverNode, error) {
	if err := needNodeProcess(f, t); err != nil {
		return nil, err
	}
	n, ok := t.Process.(DBFailoverNode)
	if !ok {
		return nil, unavailable(f, t, "not a node of a replicated MariaDB topology")
	}
	if err := n.CanDBFailover(); err != nil {
		return nil, unavailable(f, t, err.Error())
	}
	return n, nil
}

func (f DBFailover) Inject(ctx context.Context, t Target) (Heal, error) {
	n, err := f.node(t)
	if err != nil {
		return nil, err
	}
	return Failover(f).inject(ctx, f.Kind(), t, n, n.CutDBReplication)
}

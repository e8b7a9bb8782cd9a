package mysql

import "github.com/locklab/locklab/impls"

// The founding article's answer to "the database is a single point of
// failure": run two databases synchronised and switch to the standby when
// the primary dies. These are the MariaDB approaches on a primary with one
// replica (impls.MySQLReplicated, asynchronous, and impls.MySQLSemiSync,
// semi-synchronous with AFTER_SYNC), the same code as on one server; their
// clients write to the node that takes writes, so after a failover they
// follow the promoted replica. What the standby has when it takes over is
// what replication had delivered: the failover is the question.

// InsertDeleteReplicatedApproach: mysql-insert-delete on the asynchronous
// topology.
var InsertDeleteReplicatedApproach = impls.Approach{
	Name:     "mysql-insert-delete-replicated",
	Server:   impls.MySQLReplicated,
	Weak:     impls.Weaknesses{NoExpiry: true},
	Safe:     true,
	Survives: "the primary's death as a server (the replica takes over); a client crash only with a human to delete the row",
	Summary:  "mysql-insert-delete on a MariaDB primary with an asynchronous replica; clients follow the node that takes writes",
	Fails:    "a failover loses what had not replicated: a lost lock row is granted again, a lost release comes back as a row nobody will delete",
	New:      newInsertDelete("mysql-insert-delete-replicated", impls.MySQLReplicated),
}

// ForUpdateReplicatedApproach: mysql-for-update on the asynchronous
// topology.
var ForUpdateReplicatedApproach = impls.Approach{
	Name:     "mysql-for-update-replicated",
	Server:   impls.MySQLReplicated,
	Caps:     impls.Capabilities{Blocking: true, FreedOnDisconnect: true},
	Safe:     true,
	Survives: "client crashes (the server rolls back on disconnect)",
	Summary:  "mysql-for-update on a MariaDB primary with an asynchronous replica; clients follow the node that takes writes",
	Fails:    "a row lock is never replicated: after a failover the new primary grants it again while the old holder believes it holds",
	New:      newForUpdate("mysql-for-update-replicated", impls.MySQLReplicated),
}

// ShardedReplicatedApproach: mysql-sharded on the asynchronous topology.
var ShardedReplicatedApproach = impls.Approach{
	Name:     "mysql-sharded-replicated",
	Server:   impls.MySQLReplicated,
	Caps:     impls.Capabilities{TTL: true, Reentrant: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (an expired deadline is taken over), a failover of what had replicated",
	Summary:  "mysql-sharded on a MariaDB primary with an asynchronous replica; clients follow the node that takes writes",
	Fails:    "a failover loses unreplicated lock rows: an older holder's row expires on the new primary and is taken while the lost grant's lease is valid",
	New:      newSharded("mysql-sharded-replicated", impls.MySQLReplicated),
}

// InsertDeleteSemiSyncApproach: mysql-insert-delete on the
// semi-synchronous topology.
var InsertDeleteSemiSyncApproach = impls.Approach{
	Name:     "mysql-insert-delete-semisync",
	Server:   impls.MySQLSemiSync,
	Weak:     impls.Weaknesses{NoExpiry: true},
	Safe:     true,
	Survives: "a failover within rpl_semi_sync_master_timeout of losing the replica: no grant is reported that the replica lacks",
	Summary:  "mysql-insert-delete on a MariaDB primary whose commits wait (AFTER_SYNC) for the replica's receipt",
	Fails:    "a release caught in the wait by a failover comes back as a row nobody will delete; past the 10 s timeout the primary silently replicates asynchronously",
	New:      newInsertDelete("mysql-insert-delete-semisync", impls.MySQLSemiSync),
}

// ForUpdateSemiSyncApproach: mysql-for-update on the semi-synchronous
// topology.
var ForUpdateSemiSyncApproach = impls.Approach{
	Name:     "mysql-for-update-semisync",
	Server:   impls.MySQLSemiSync,
	Caps:     impls.Capabilities{Blocking: true, FreedOnDisconnect: true},
	Safe:     true,
	Survives: "client crashes (the server rolls back on disconnect)",
	Summary:  "mysql-for-update on a MariaDB primary whose commits wait (AFTER_SYNC) for the replica's receipt",
	Fails:    "a row lock writes nothing, so nothing waits and nothing replicates: after a failover the new primary grants it again while the old holder believes it holds",
	New:      newForUpdate("mysql-for-update-semisync", impls.MySQLSemiSync),
}

// ShardedSemiSyncApproach: mysql-sharded on the semi-synchronous topology.
var ShardedSemiSyncApproach = impls.Approach{
	Name:     "mysql-sharded-semisync",
	Server:   impls.MySQLSemiSync,
	Caps:     impls.Capabilities{TTL: true, Reentrant: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes, a failover within rpl_semi_sync_master_timeout of losing the replica: no grant is reported that the replica lacks",
	Summary:  "mysql-sharded on a MariaDB primary whose commits wait (AFTER_SYNC) for the replica's receipt",
	Fails:    "past the 10 s timeout the primary silently replicates asynchronously, and a failover then loses grants as without semi-sync",
	New:      newSharded("mysql-sharded-semisync", impls.MySQLSemiSync),
}

package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// InsertDeleteApproach: a row per held lock under a unique key. INSERT is
// acquire (a duplicate-key error means someone holds it), DELETE of our own
// row is release. Nothing expires: a holder that crashes holds forever.
var InsertDeleteApproach = impls.Approach{
	Name:     "mysql-insert-delete",
	Server:   impls.MySQL,
	Weak:     impls.Weaknesses{NoExpiry: true},
	Safe:     true,
	Survives: "a MariaDB restart (InnoDB keeps the rows); a client crash only with a human to delete the row",
	Summary:  "INSERT a row with a unique lock key; owner-checked DELETE releases",
	Fails:    "no expiry: a crashed holder's row blocks the key until someone deletes it by hand",
	New:      newInsertDelete("mysql-insert-delete", impls.MySQL),
}

// newInsertDelete is the approach's constructor as approach name on
// server kind s.
func newInsertDelete(name string, s impls.Server) func(ctx context.Context, env impls.Env) (impls.Locker, error) {
	return func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		db, err := openWithSchema(ctx, name, s, env, 1, insertDeleteSchema("locklab_insert_delete"))
		if err != nil {
			return nil, err
		}
		return &InsertDelete{db: db, clock: env.Clock, table: "locklab_insert_delete"}, nil
	}
}

// insertDeleteSchema: the row's auto-increment id looks like a fencing
// token but is not one. InnoDB allocates it when the INSERT starts, before
// the statement may wait on a row that is being deleted; a client arriving
// later can get in first with a higher id, and the waiter then holds the
// lock with the lower one (locklab's bench caught exactly that: token 1995
// granted after 1996). So the leases carry no token.
func insertDeleteSchema(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  lock_key VARCHAR(255) NOT NULL,
  owner CHAR(32) NOT NULL,
  acquired_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  expires_at TIMESTAMP(6) NULL,
  UNIQUE KEY lock_key (lock_key),
  KEY expires_at (expires_at)
) ENGINE=InnoDB`
}

// InsertDelete is one client of the approach (and of the reaper variant).
type InsertDelete struct {
	db    *sql.DB
	clock clock.Clock
	table string
	ttl   bool // set expires_at for the reaper
	stop  func()
}

// Acquire retries the INSERT with back-off until it succeeds or ctx ends.
func (l *InsertDelete) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	owner := impls.NewToken()
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	var sent time.Time
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		var err error
		sent = l.clock.Now()
		if l.ttl {
			_, err = l.db.ExecContext(ctx, "INSERT INTO "+l.table+" (lock_key, owner, expires_at) VALUES (?, ?, NOW(6) + INTERVAL ? MICROSECOND)",
				key, owner, ttl.Microseconds())
		} else {
			_, err = l.db.ExecContext(ctx, "INSERT INTO "+l.table+" (lock_key, owner) VALUES (?, ?)", key, owner)
		}
		switch {
		case err == nil:
			return true, nil
		case isContention(err):
			return false, nil
		default:
			return false, classify(ctx, "INSERT", err)
		}
	})
	if err != nil {
		return nil, err
	}
	lease := &insertDeleteLease{l: l, key: key, owner: owner}
	if l.ttl {
		lease.validUntil = sent.Add(ttl)
	}
	return lease, nil
}

// Close drops the connection; rows stay, as after a crash.
func (l *InsertDelete) Close() error {
	if l.stop != nil {
		l.stop()
	}
	return l.db.Close()
}

type insertDeleteLease struct {
	l          *InsertDelete
	key, owner string
	validUntil time.Time
}

func (s *insertDeleteLease) Key() string           { return s.key }
func (s *insertDeleteLease) Token() (uint64, bool) { return 0, false } // see insertDeleteSchema
func (s *insertDeleteLease) ValidUntil() time.Time { return s.validUntil }
func (s *insertDeleteLease) Lost() <-chan struct{} { return nil }

func (s *insertDeleteLease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("%s has no renewal: %w", s.l.table, impls.ErrUnsupported)
}

// Release deletes the row only if it is still ours; one statement, so the
// check and the delete are one transaction.
func (s *insertDeleteLease) Release(ctx context.Context) error {
	return execOne(ctx, s.l.db, "DELETE", s.key, "DELETE FROM "+s.l.table+" WHERE lock_key = ? AND owner = ?", s.key, s.owner)
}

package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/locklab/locklab/impls"
)

// InsertDeleteApproach: a row per held lock under a unique key. INSERT is
// acquire (a duplicate-key error means someone holds it), DELETE of our own
// row is release. Nothing expires: a holder that crashes holds forever.
var InsertDeleteApproach = impls.Approach{
	Name:     "mysql-insert-delete",
	Backend:  impls.MySQL,
	Caps:     impls.Capabilities{Fencing: true},
	Weak:     impls.Weaknesses{NoExpiry: true},
	Safe:     true,
	Survives: "client crashes only with a human to delete the row; a MariaDB restart keeps the rows (InnoDB is durable)",
	Summary:  "INSERT a row with a unique lock key; owner-checked DELETE releases",
	Fails:    "no expiry: a crashed holder's row blocks the key until someone deletes it by hand",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if env.Endpoints.MySQL == "" {
			return nil, fmt.Errorf("mysql-insert-delete: no mysql endpoint")
		}
		db, err := open(ctx, env.Endpoints.MySQL)
		if err != nil {
			return nil, err
		}
		if _, err := db.ExecContext(ctx, insertDeleteSchema); err != nil {
			db.Close()
			return nil, fmt.Errorf("mysql-insert-delete: create table: %w", err)
		}
		return &InsertDelete{db: db}, nil
	},
}

// The auto-increment id of the row is the fencing token: every INSERT takes
// a new, higher id, so each successive holder's token is larger.
const insertDeleteSchema = `CREATE TABLE IF NOT EXISTS locklab_insert_delete (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  lock_key VARCHAR(255) NOT NULL,
  owner CHAR(32) NOT NULL,
  acquired_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY lock_key (lock_key)
) ENGINE=InnoDB`

// InsertDelete is one client of the approach.
type InsertDelete struct {
	db *sql.DB
}

// Acquire retries the INSERT with back-off until it succeeds or ctx ends.
func (l *InsertDelete) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	owner := newOwner()
	backoff := impls.DefaultBackoff()
	for {
		res, err := l.db.ExecContext(ctx, "INSERT INTO locklab_insert_delete (lock_key, owner) VALUES (?, ?)", key, owner)
		switch {
		case err == nil:
			id, err := res.LastInsertId()
			if err != nil {
				return nil, classify(ctx, "INSERT", err)
			}
			return &insertDeleteLease{l: l, key: key, owner: owner, token: uint64(id)}, nil
		case isContention(err):
			if opt.Try {
				return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
			}
			if err := backoff.Wait(ctx); err != nil {
				return nil, err
			}
		default:
			return nil, classify(ctx, "INSERT", err)
		}
	}
}

// Close drops the connection; rows stay, as after a crash.
func (l *InsertDelete) Close() error { return l.db.Close() }

func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type insertDeleteLease struct {
	l          *InsertDelete
	key, owner string
	token      uint64
}

func (s *insertDeleteLease) Key() string           { return s.key }
func (s *insertDeleteLease) Token() (uint64, bool) { return s.token, true }
func (s *insertDeleteLease) ValidUntil() time.Time { return time.Time{} }
func (s *insertDeleteLease) Lost() <-chan struct{} { return nil }

func (s *insertDeleteLease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("mysql-insert-delete has no expiry to extend: %w", impls.ErrUnsupported)
}

// Release deletes the row only if it is still ours; one statement, so the
// check and the delete are one transaction.
func (s *insertDeleteLease) Release(ctx context.Context) error {
	res, err := s.l.db.ExecContext(ctx, "DELETE FROM locklab_insert_delete WHERE lock_key = ? AND owner = ?", s.key, s.owner)
	if err != nil {
		return classify(ctx, "DELETE", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return classify(ctx, "DELETE", err)
	}
	if n == 0 {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	return nil
}

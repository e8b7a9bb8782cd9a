package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/locklab/locklab/impls"
)

// OptimisticApproach: a lock row with state, owner and a version column.
// Acquire reads the row and, if it is free, updates it conditionally on the
// version it read; zero rows affected means another client won the race.
// Every acquisition bumps the version, which makes it a fencing token.
var OptimisticApproach = impls.Approach{
	Name:     "mysql-optimistic",
	Server:   impls.MySQL,
	Caps:     impls.Capabilities{Fencing: true},
	Weak:     impls.Weaknesses{NoExpiry: true},
	Safe:     true,
	Survives: "a MariaDB restart; a client crash only with a human to free the row",
	Summary:  "read the row's version; UPDATE ... SET state=held, version=version+1 WHERE state=free AND version=?",
	Fails:    "no expiry: a crashed holder's row stays held; under contention most attempts lose the race and poll",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		db, err := openWithSchema(ctx, "mysql-optimistic", impls.MySQL, env, 1, `CREATE TABLE IF NOT EXISTS locklab_optimistic (
  lock_key VARCHAR(255) NOT NULL PRIMARY KEY,
  held TINYINT NOT NULL DEFAULT 0,
  owner CHAR(32) NULL,
  version BIGINT UNSIGNED NOT NULL DEFAULT 0
) ENGINE=InnoDB`)
		if err != nil {
			return nil, err
		}
		return &Optimistic{db: db}, nil
	},
}

// Optimistic is one client of the approach.
type Optimistic struct {
	db *sql.DB
}

// Acquire polls: read the row, and if free, try the conditional update.
func (l *Optimistic) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	owner := impls.NewToken()
	var version uint64
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		var held bool
		err := l.db.QueryRowContext(ctx, "SELECT held, version FROM locklab_optimistic WHERE lock_key = ?", key).Scan(&held, &version)
		switch {
		case err == sql.ErrNoRows:
			if _, err := l.db.ExecContext(ctx, "INSERT IGNORE INTO locklab_optimistic (lock_key) VALUES (?)", key); err != nil && !isContention(err) {
				return false, classify(ctx, "INSERT", err)
			}
			if err := l.db.QueryRowContext(ctx, "SELECT held, version FROM locklab_optimistic WHERE lock_key = ?", key).Scan(&held, &version); err != nil {
				return false, classify(ctx, "SELECT", err)
			}
			return false, nil
		case err != nil:
			return false, classify(ctx, "SELECT", err)
		case held:
			return false, nil
		}
		res, err := l.db.ExecContext(ctx, "UPDATE locklab_optimistic SET held = 1, owner = ?, version = version + 1 WHERE lock_key = ? AND held = 0 AND version = ?",
			owner, key, version)
		if err != nil {
			if isContention(err) {
				return false, nil
			}
			return false, classify(ctx, "UPDATE", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, classify(ctx, "UPDATE", err)
		}
		return n == 1, nil // 0: someone else moved the version first
	})
	if err != nil {
		return nil, err
	}
	return &optimisticLease{l: l, key: key, owner: owner, version: version + 1}, nil
}

// Close drops the connection; a held row stays held.
func (l *Optimistic) Close() error { return l.db.Close() }

type optimisticLease struct {
	l          *Optimistic
	key, owner string
	version    uint64
}

func (s *optimisticLease) Key() string           { return s.key }
func (s *optimisticLease) Token() (uint64, bool) { return s.version, true }
func (s *optimisticLease) ValidUntil() time.Time { return time.Time{} }
func (s *optimisticLease) Lost() <-chan struct{} { return nil }

func (s *optimisticLease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("mysql-optimistic has no expiry to extend: %w", impls.ErrUnsupported)
}

// Release frees the row if it still carries our owner and version; the
// release bumps the version too, so a stale read cannot win later.
func (s *optimisticLease) Release(ctx context.Context) error {
	return execOne(ctx, s.l.db, "release", s.key,
		"UPDATE locklab_optimistic SET held = 0, owner = NULL, version = version + 1 WHERE lock_key = ? AND owner = ? AND version = ?",
		s.key, s.owner, s.version)
}

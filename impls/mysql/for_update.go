package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
)

// ForUpdateApproach: SELECT ... FOR UPDATE on the lock's row, inside a
// transaction that stays open while the lock is held; COMMIT releases.
// Waiters queue in InnoDB's lock manager and are woken by it; if the
// holder's connection dies, the server rolls back and frees the lock.
var ForUpdateApproach = impls.Approach{
	Name:     "mysql-for-update",
	Server:   impls.MySQL,
	Caps:     impls.Capabilities{Blocking: true, FreedOnDisconnect: true},
	Safe:     true,
	Survives: "client crashes (the server rolls back on disconnect); a MariaDB restart frees every lock",
	Summary:  "SELECT ... FOR UPDATE in a transaction held open; COMMIT releases",
	Fails:    "a holder whose connection silently stalls keeps the lock until TCP gives up; a holder that loses its connection is not told",
	New:      newForUpdate("mysql-for-update", impls.MySQL),
}

// newForUpdate is the approach's constructor as approach name on server
// kind s.
func newForUpdate(name string, s impls.Server) func(ctx context.Context, env impls.Env) (impls.Locker, error) {
	return func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		// One connection per lock held at once, plus one to create rows.
		db, err := openWithSchema(ctx, name, s, env, 8,
			`CREATE TABLE IF NOT EXISTS locklab_for_update (lock_key VARCHAR(255) NOT NULL PRIMARY KEY) ENGINE=InnoDB`)
		if err != nil {
			return nil, err
		}
		return &ForUpdate{db: db, held: map[*forUpdateLease]bool{}}, nil
	}
}

// ForUpdate is one client of the approach.
type ForUpdate struct {
	db   *sql.DB
	mu   sync.Mutex
	held map[*forUpdateLease]bool
}

// Acquire waits in InnoDB's lock queue for the row lock.
func (l *ForUpdate) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	// Make sure the row exists. A plain read first: INSERT IGNORE of an
	// existing row would wait for the holder's lock, and Try must not wait.
	var one int
	err := l.db.QueryRowContext(ctx, "SELECT 1 FROM locklab_for_update WHERE lock_key = ?", key).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = l.db.ExecContext(ctx, "INSERT IGNORE INTO locklab_for_update (lock_key) VALUES (?)", key)
	}
	if err != nil {
		return nil, l.failed(ctx, "create lock row", err)
	}
	query := "SELECT lock_key FROM locklab_for_update WHERE lock_key = ? FOR UPDATE"
	if opt.Try {
		query += " NOWAIT"
	}
	var tx *sql.Tx
	var end context.CancelFunc
	err = impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		// The transaction lives as long as the lease, not as long as this
		// call: database/sql rolls a transaction back when its context
		// ends. The wait itself is bounded by ctx on the query.
		var txCtx context.Context
		txCtx, end = context.WithCancel(context.Background())
		var err error
		tx, err = l.db.BeginTx(txCtx, nil)
		if err != nil {
			end()
			return false, l.failed(ctx, "BEGIN", err)
		}
		var got string
		err = tx.QueryRowContext(ctx, query, key).Scan(&got)
		switch {
		case err == nil:
			return true, nil
		case isContention(err): // NOWAIT, or innodb_lock_wait_timeout passed
			tx.Rollback()
			end()
			return false, nil
		default:
			tx.Rollback()
			end()
			return false, l.failed(ctx, "SELECT FOR UPDATE", err)
		}
	})
	if err != nil {
		return nil, err
	}
	lease := &forUpdateLease{l: l, key: key, tx: tx, end: end}
	l.mu.Lock()
	l.held[lease] = true
	l.mu.Unlock()
	return lease, nil
}

// failed classifies an acquire error. When ctx ended, the driver closed the
// connection, which rolls the transaction back: whatever the server did,
// the lock is not ours, so this is a definite "not acquired".
func (l *ForUpdate) failed(ctx context.Context, op string, err error) error {
	if impls.Expired(ctx) != nil {
		return fmt.Errorf("%s: %w: %w (%w)", op, impls.ErrNotAcquired, err, impls.Expired(ctx))
	}
	return classify(ctx, op, err)
}

// Close drops every connection, as a crash would; the server rolls back
// and frees the locks. sql.DB.Close alone would wait for the open
// transactions, so their contexts are ended first, which makes database/sql
// discard their connections.
func (l *ForUpdate) Close() error {
	l.mu.Lock()
	for lease := range l.held {
		lease.end()
	}
	l.held = map[*forUpdateLease]bool{}
	l.mu.Unlock()
	return l.db.Close()
}

type forUpdateLease struct {
	l   *ForUpdate
	key string
	tx  *sql.Tx
	end context.CancelFunc
}

func (s *forUpdateLease) Key() string           { return s.key }
func (s *forUpdateLease) Token() (uint64, bool) { return 0, false }
func (s *forUpdateLease) ValidUntil() time.Time { return time.Time{} }
func (s *forUpdateLease) Lost() <-chan struct{} { return nil }

func (s *forUpdateLease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("mysql-for-update holds while the transaction is open: %w", impls.ErrUnsupported)
}

// Release commits the transaction, which frees the row lock.
func (s *forUpdateLease) Release(ctx context.Context) error {
	err := s.tx.Commit()
	s.end()
	s.l.mu.Lock()
	delete(s.l.held, s)
	s.l.mu.Unlock()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrTxDone):
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	default:
		return classify(ctx, "COMMIT", err)
	}
}

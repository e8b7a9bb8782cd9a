package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// ShardSlots is the number of central lock rows keys are spread over.
const ShardSlots = 100

// ShardedApproach: the "central lock" pattern. A key maps by CRC32 to one of
// 100 central rows; a short transaction locks that row FOR UPDATE, then
// reads and writes the key's lock row: request id (the owner), reentrancy
// count and deadline. The owner re-enters and the count goes up; an expired
// deadline can be taken over; release decrements and frees at zero.
var ShardedApproach = impls.Approach{
	Name:     "mysql-sharded",
	Server:   impls.MySQL,
	Caps:     impls.Capabilities{TTL: true, Reentrant: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (an expired deadline is taken over), a MariaDB restart",
	Summary:  "CRC32(key) % 100 picks a central row locked FOR UPDATE; lock row with request id, count, deadline",
	Fails:    "a holder that outlives its deadline is taken over while it still works (no fencing); deadlines use the server's clock",
	New:      newSharded("mysql-sharded", impls.MySQL),
}

// newSharded is the approach's constructor as approach name on server kind
// s.
func newSharded(name string, s impls.Server) func(ctx context.Context, env impls.Env) (impls.Locker, error) {
	return func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		db, err := openWithSchema(ctx, name, s, env, 1,
			`CREATE TABLE IF NOT EXISTS locklab_sharded_central (slot INT NOT NULL PRIMARY KEY) ENGINE=InnoDB`,
			`CREATE TABLE IF NOT EXISTS locklab_sharded_lock (
  lock_key VARCHAR(255) NOT NULL PRIMARY KEY,
  request_id CHAR(32) NOT NULL,
  cnt INT NOT NULL,
  deadline TIMESTAMP(6) NOT NULL
) ENGINE=InnoDB`)
		if err != nil {
			return nil, err
		}
		var rows strings.Builder
		for i := 0; i < ShardSlots; i++ {
			if i > 0 {
				rows.WriteString(",")
			}
			fmt.Fprintf(&rows, "(%d)", i)
		}
		if _, err := db.ExecContext(ctx, "INSERT IGNORE INTO locklab_sharded_central (slot) VALUES "+rows.String()); err != nil && !isContention(err) {
			db.Close()
			return nil, fmt.Errorf("%s: central rows: %w", name, err)
		}
		return &Sharded{db: db, clock: env.Clock, requestID: impls.NewToken()}, nil
	}
}

// Sharded is one client of the approach; its request id is its identity
// as an owner, so its acquires of one key re-enter.
type Sharded struct {
	db        *sql.DB
	clock     clock.Clock
	requestID string
}

func slotOf(key string) uint32 { return crc32.ChecksumIEEE([]byte(key)) % ShardSlots }

// inSlot runs f in a transaction that holds key's central row. Only a
// failed COMMIT leaves the outcome open: any earlier failure rolls the
// transaction back (the driver drops a connection it lost track of, and
// the server rolls back a dropped connection's transaction).
func (l *Sharded) inSlot(ctx context.Context, key string, f func(*sql.Tx) error) error {
	failed := func(op string, err error) error {
		if errors.Is(err, impls.ErrNotHeld) {
			return err
		}
		if impls.Expired(ctx) != nil {
			return fmt.Errorf("%s: %w: %w (%w)", op, impls.ErrNotAcquired, err, impls.Expired(ctx))
		}
		return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return failed("BEGIN", err)
	}
	var slot int
	if err := tx.QueryRowContext(ctx, "SELECT slot FROM locklab_sharded_central WHERE slot = ? FOR UPDATE", slotOf(key)).Scan(&slot); err != nil {
		tx.Rollback()
		return failed("lock central row", err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return failed("lock row", err)
	}
	if err := tx.Commit(); err != nil {
		return classify(ctx, "COMMIT", err)
	}
	return nil
}

// Acquire takes or re-enters the lock, polling while another owner holds it.
func (l *Sharded) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	var sent time.Time
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		sent = l.clock.Now()
		granted := false
		err := l.inSlot(ctx, key, func(tx *sql.Tx) error {
			var owner string
			var live bool
			err := tx.QueryRowContext(ctx, "SELECT request_id, deadline > NOW(6) FROM locklab_sharded_lock WHERE lock_key = ?", key).Scan(&owner, &live)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				_, err = tx.ExecContext(ctx, "INSERT INTO locklab_sharded_lock (lock_key, request_id, cnt, deadline) VALUES (?, ?, 1, NOW(6) + INTERVAL ? MICROSECOND)",
					key, l.requestID, ttl.Microseconds())
			case err != nil:
			case owner == l.requestID && live: // re-entry
				_, err = tx.ExecContext(ctx, "UPDATE locklab_sharded_lock SET cnt = cnt + 1, deadline = NOW(6) + INTERVAL ? MICROSECOND WHERE lock_key = ?",
					ttl.Microseconds(), key)
			case !live: // expired: take it over
				_, err = tx.ExecContext(ctx, "UPDATE locklab_sharded_lock SET request_id = ?, cnt = 1, deadline = NOW(6) + INTERVAL ? MICROSECOND WHERE lock_key = ?",
					l.requestID, ttl.Microseconds(), key)
			default:
				return nil // held by another owner
			}
			if err != nil {
				return err
			}
			granted = true
			return nil
		})
		return granted, err
	})
	if err != nil {
		return nil, err
	}
	return &shardedLease{l: l, key: key, validUntil: sent.Add(ttl)}, nil
}

// Close drops the connection; the lock rows expire at their deadlines.
func (l *Sharded) Close() error { return l.db.Close() }

type shardedLease struct {
	l          *Sharded
	key        string
	mu         sync.Mutex
	validUntil time.Time
	released   bool
}

func (s *shardedLease) Key() string           { return s.key }
func (s *shardedLease) Token() (uint64, bool) { return 0, false }
func (s *shardedLease) Lost() <-chan struct{} { return nil }
func (s *shardedLease) ValidUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil
}

// Release gives back one level of re-entry; at zero the row goes. A lease
// is released once: a second call on it is "not held".
func (s *shardedLease) Release(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	err := s.l.inSlot(ctx, s.key, func(tx *sql.Tx) error {
		if err := execOne(ctx, tx, "release", s.key,
			"UPDATE locklab_sharded_lock SET cnt = cnt - 1 WHERE lock_key = ? AND request_id = ? AND cnt > 0", s.key, s.l.requestID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM locklab_sharded_lock WHERE lock_key = ? AND request_id = ? AND cnt = 0", s.key, s.l.requestID)
		return err
	})
	if err == nil || errors.Is(err, impls.ErrNotHeld) {
		s.released = true
	}
	return err
}

// Extend moves the deadline while the lock is still ours and unexpired.
func (s *shardedLease) Extend(ctx context.Context, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return fmt.Errorf("extend %s: %w", s.key, impls.ErrNotHeld)
	}
	sent := s.l.clock.Now()
	err := execOne(ctx, s.l.db, "extend", s.key,
		"UPDATE locklab_sharded_lock SET deadline = NOW(6) + INTERVAL ? MICROSECOND WHERE lock_key = ? AND request_id = ? AND deadline > NOW(6)",
		ttl.Microseconds(), s.key, s.l.requestID)
	if err == nil {
		s.validUntil = sent.Add(ttl)
	}
	return err
}

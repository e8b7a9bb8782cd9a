package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// QueueWaiterTTL is how long a waiter's place in the queue lasts after it
// last refreshed it. A live waiter refreshes every QueueWaiterTTL/4, so a
// waiter keeps its place through stalls of up to 1.5 s; a crashed one is
// passed over at most QueueWaiterTTL after its crash.
const QueueWaiterTTL = 2 * time.Second

// QueueFairApproach is the article's fix for "not fair" (seed 003: "build
// a second table, record every waiting thread in it, ordered by creation
// time; only the first created may take the lock"), on top of the
// insert/delete lock with an expiry. A waiter INSERTs a place in a queue
// table; the place's auto-increment id is its arrival order. Only the
// waiter whose place is the first live one of the key may try the lock,
// which is still the unique-key INSERT of a lock row: the queue decides
// the order, the unique key alone keeps mutual exclusion.
//
// Nothing is tied to a connection. The lock row carries the holder's TTL
// (renewable); a place carries QueueWaiterTTL, refreshed by its waiter
// while it waits. A crashed holder's lock comes free when its TTL runs out;
// a crashed waiter's place is passed over when it expires, whether it was
// at the head or not. A waiter that gives up deletes its place.
var QueueFairApproach = impls.Approach{
	Name:     "mysql-queue-fair",
	Server:   impls.MySQL,
	Caps:     impls.Capabilities{TTL: true, Fair: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (the lock row expires after its TTL; a dead waiter's place after 2 s), a MariaDB restart (InnoDB keeps both tables)",
	Summary:  "waiters INSERT a place in a queue table (auto-increment id = arrival) and refresh it; only the first live place may INSERT the lock row (unique key, expiry); owner-checked DELETE releases",
	Fails:    "a crashed waiter at the head holds up a free lock until its place expires (at most 2 s after its crash); a holder past its TTL is taken over while it works (no fencing)",
	New:      newQueueFair,
}

// The two tables. The queue's id orders it rather than a creation time: it
// never goes back with the server's clock and never ties. InnoDB allocates
// it as the INSERT starts, and a place's INSERT waits on nothing (no
// unique key), so ids follow arrivals but for INSERTs within the same
// instant, which have no order to keep.
const (
	queueLockSchema = `CREATE TABLE IF NOT EXISTS locklab_queue_lock (
  lock_key VARCHAR(255) NOT NULL PRIMARY KEY,
  owner CHAR(32) NOT NULL,
  expires_at TIMESTAMP(6) NOT NULL
) ENGINE=InnoDB`
	queueWaiterSchema = `CREATE TABLE IF NOT EXISTS locklab_queue_waiter (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  lock_key VARCHAR(255) NOT NULL,
  owner CHAR(32) NOT NULL,
  created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  expires_at TIMESTAMP(6) NOT NULL,
  KEY lock_key (lock_key, id),
  KEY owner (owner)
) ENGINE=InnoDB`
)

// queueHeadQuery names the head of a key's queue: its first live place.
// (A test turns the order round to prove the suite catches an unfair lock.)
const queueHeadQuery = "SELECT id FROM locklab_queue_waiter WHERE lock_key = ? AND expires_at > NOW(6) ORDER BY id LIMIT 1"

func newQueueFair(ctx context.Context, env impls.Env) (impls.Locker, error) {
	// Two connections: a lease's release need not wait for another
	// acquire of the same client.
	db, err := openWithSchema(ctx, "mysql-queue-fair", impls.MySQL, env, 2, queueLockSchema, queueWaiterSchema)
	if err != nil {
		return nil, err
	}
	return &QueueFair{db: db, clock: env.Clock, waiterTTL: QueueWaiterTTL, headQuery: queueHeadQuery}, nil
}

// QueueFair is one client of the approach.
type QueueFair struct {
	db        *sql.DB
	clock     clock.Clock
	waiterTTL time.Duration
	headQuery string
}

// Acquire joins key's queue and polls until its place is the head and the
// lock row is free, or ctx ends. With opt.Try it never queues: it takes a
// free lock that nobody waits for, and nothing else.
func (l *QueueFair) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	owner := impls.NewToken()
	if opt.Try {
		return l.try(ctx, key, owner, ttl)
	}
	p := &queuePlace{l: l, key: key, owner: owner}
	if err := p.join(ctx); err != nil {
		p.leave(ctx) // the INSERT may have been applied
		return nil, waitFailed(ctx, "join the queue", err)
	}
	backoff := impls.DefaultBackoff()
	for {
		lease, err := p.attempt(ctx, ttl)
		if lease != nil {
			p.dequeue(ctx)
			return lease, nil
		}
		if err != nil {
			p.leave(ctx)
			return nil, err
		}
		if err := backoff.Wait(ctx); err != nil {
			p.leave(ctx)
			return nil, err
		}
	}
}

// try takes the lock if it is free and nobody is queued for it.
func (l *QueueFair) try(ctx context.Context, key, owner string, ttl time.Duration) (impls.Lease, error) {
	var queued bool
	err := l.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM locklab_queue_waiter WHERE lock_key = ? AND expires_at > NOW(6))", key).Scan(&queued)
	if err != nil {
		return nil, waitFailed(ctx, "read the queue", err)
	}
	if !queued {
		lease, err := l.grant(ctx, key, owner, ttl)
		if lease != nil || err != nil {
			return lease, err
		}
	}
	return nil, fmt.Errorf("%w: %s is held or has waiters", impls.ErrNotAcquired, key)
}

// grant is the one write that takes the lock: the INSERT of the lock row
// under its unique key. A row whose TTL ran out is free: it is deleted and
// the INSERT tried once more. nil, nil: the lock is held.
func (l *QueueFair) grant(ctx context.Context, key, owner string, ttl time.Duration) (*queueLease, error) {
	for retried := false; ; retried = true {
		sent := l.clock.Now()
		_, err := l.db.ExecContext(ctx, "INSERT INTO locklab_queue_lock (lock_key, owner, expires_at) VALUES (?, ?, NOW(6) + INTERVAL ? MICROSECOND)",
			key, owner, ttl.Microseconds())
		switch {
		case err == nil:
			return &queueLease{l: l, key: key, owner: owner, validUntil: sent.Add(ttl)}, nil
		case !isContention(err):
			return nil, classify(ctx, "INSERT lock row", err) // indeterminate when no reply came
		case retried:
			return nil, nil
		}
		res, err := execRetry(ctx, l.db, "DELETE FROM locklab_queue_lock WHERE lock_key = ? AND expires_at <= NOW(6)", key)
		if err != nil {
			// Deleting an expired row grants nothing to anyone.
			return nil, waitFailed(ctx, "DELETE expired lock row", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return nil, nil
		}
	}
}

// waitFailed classifies a failed statement of the wait, before the lock's
// INSERT was sent: whatever the server did with it, the lock was not
// taken. Its place in the queue may stay (it may have been applied, or the
// waiter could not delete it) until the place expires.
func waitFailed(ctx context.Context, op string, err error) error {
	if exp := impls.Expired(ctx); exp != nil {
		return fmt.Errorf("%s: %w: %w (%w)", op, impls.ErrNotAcquired, err, exp)
	}
	return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
}

// Close drops the connections: the lock row and the places in the queue
// stay, as after a crash, until they expire.
func (l *QueueFair) Close() error { return l.db.Close() }

// queuePlace is one waiter's place in a key's queue.
type queuePlace struct {
	l          *QueueFair
	key, owner string
	id         int64
	// refreshed is when the place's expiry was last set (the statement's
	// start, on the machine's monotonic clock: a skewed lease clock must
	// not make a live waiter lose its place).
	refreshed time.Time
}

func (p *queuePlace) join(ctx context.Context) error {
	start := time.Now()
	res, err := execRetry(ctx, p.l.db, "INSERT INTO locklab_queue_waiter (lock_key, owner, expires_at) VALUES (?, ?, NOW(6) + INTERVAL ? MICROSECOND)",
		p.key, p.owner, p.l.waiterTTL.Microseconds())
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	p.id, p.refreshed = id, start
	return nil
}

// refresh keeps the place alive. A place that expired (its waiter stalled
// past QueueWaiterTTL) may have been passed over already and cannot be
// revived; the waiter joins again at the tail.
func (p *queuePlace) refresh(ctx context.Context) error {
	start := time.Now()
	res, err := execRetry(ctx, p.l.db, "UPDATE locklab_queue_waiter SET expires_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = ? AND expires_at > NOW(6)",
		p.l.waiterTTL.Microseconds(), p.id)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 1 {
		p.refreshed = start
		return nil
	}
	if _, err := execRetry(ctx, p.l.db, "DELETE FROM locklab_queue_waiter WHERE id = ?", p.id); err != nil {
		return err
	}
	return p.join(ctx)
}

// attempt is one round of the wait: refresh the place when due, and if it
// is the head, try the lock. nil, nil: not granted yet.
func (p *queuePlace) attempt(ctx context.Context, ttl time.Duration) (*queueLease, error) {
	if time.Since(p.refreshed) >= p.l.waiterTTL/4 {
		if err := p.refresh(ctx); err != nil {
			return nil, waitFailed(ctx, "refresh the place in the queue", err)
		}
	}
	var head int64
	err := p.l.db.QueryRowContext(ctx, p.l.headQuery, p.key).Scan(&head)
	switch {
	case errors.Is(err, sql.ErrNoRows): // our own place expired: the next refresh joins again
		return nil, nil
	case err != nil:
		return nil, waitFailed(ctx, "read the head of the queue", err)
	case head != p.id:
		return nil, nil
	}
	return p.l.grant(ctx, p.key, p.owner, ttl)
}

// afterwards is a context for the clean-up after a wait: ctx has often
// ended, so it gets half a second of its own. If the statement cannot be
// sent (the client crashed, the server is cut off) the place stays until
// it expires, as a crashed waiter's does.
func afterwards(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 500*time.Millisecond)
}

// leave deletes the place of a waiter that gave up, found by its owner
// token: its INSERT may have been applied with no id told back.
func (p *queuePlace) leave(ctx context.Context) {
	ctx, cancel := afterwards(ctx)
	defer cancel()
	_, _ = execRetry(ctx, p.l.db, "DELETE FROM locklab_queue_waiter WHERE owner = ?", p.owner)
}

// dequeue deletes the granted waiter's place, and the expired places of
// dead waiters it was let past. Should it fail, the place holds the queue
// up until it expires, as a dead waiter's does.
func (p *queuePlace) dequeue(ctx context.Context) {
	ctx, cancel := afterwards(ctx)
	defer cancel()
	_, _ = execRetry(ctx, p.l.db, "DELETE FROM locklab_queue_waiter WHERE lock_key = ? AND id <= ? AND (id = ? OR expires_at <= NOW(6))",
		p.key, p.id, p.id)
}

type queueLease struct {
	l          *QueueFair
	key, owner string
	mu         sync.Mutex
	validUntil time.Time
}

func (s *queueLease) Key() string           { return s.key }
func (s *queueLease) Token() (uint64, bool) { return 0, false } // nothing orders grants across expiries
func (s *queueLease) Lost() <-chan struct{} { return nil }
func (s *queueLease) ValidUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil
}

// Release deletes the lock row if it is still ours and unexpired. An
// expired row was free already ("not held"); it goes too, unless someone
// took it over.
func (s *queueLease) Release(ctx context.Context) error {
	err := execOne(ctx, s.l.db, "release", s.key, "DELETE FROM locklab_queue_lock WHERE lock_key = ? AND owner = ? AND expires_at > NOW(6)", s.key, s.owner)
	if errors.Is(err, impls.ErrNotHeld) {
		_, _ = s.l.db.ExecContext(ctx, "DELETE FROM locklab_queue_lock WHERE lock_key = ? AND owner = ?", s.key, s.owner)
	}
	return err
}

// Extend moves the expiry of the lock row while it is ours and unexpired.
func (s *queueLease) Extend(ctx context.Context, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sent := s.l.clock.Now()
	err := execOne(ctx, s.l.db, "extend", s.key,
		"UPDATE locklab_queue_lock SET expires_at = NOW(6) + INTERVAL ? MICROSECOND WHERE lock_key = ? AND owner = ? AND expires_at > NOW(6)",
		ttl.Microseconds(), s.key, s.owner)
	if err == nil {
		s.validUntil = sent.Add(ttl)
	}
	return err
}

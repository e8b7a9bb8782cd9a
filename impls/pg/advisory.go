// Package pg holds the PostgreSQL lock approaches.
package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/locklab/locklab/impls"
)

// Register adds every PostgreSQL approach to r.
func Register(r *impls.Registry) { r.Register(AdvisoryApproach) }

// waitChunk bounds one server-side wait (lock_timeout): between chunks the
// client checks its context, so giving up never cuts a statement short,
// which would kill the connection and with it every lock it holds.
const waitChunk = 100 * time.Millisecond

// AdvisoryApproach: pg_advisory_lock on a dedicated connection, keyed by a
// server-side hash of the key. The lock belongs to the session: it is
// reentrant, waiters queue in the server, and it is freed the moment the
// connection dies.
var AdvisoryApproach = impls.Approach{
	Name:     "pg-advisory",
	Server:   impls.Postgres,
	Caps:     impls.Capabilities{Blocking: true, Reentrant: true, FreedOnDisconnect: true},
	Safe:     true,
	Survives: "client crashes (the server frees the locks of a dead session); a restart frees every lock",
	Summary:  "SELECT pg_advisory_lock(hashtextextended(key, 0)) on a dedicated session",
	Fails:    "a dropped connection frees every lock of the session at once, and the holder learns it only at its next statement",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if env.Endpoints.DSN(impls.Postgres) == "" {
			return nil, fmt.Errorf("pg-advisory: no postgres endpoint")
		}
		l := &Advisory{dsn: env.Endpoints.DSN(impls.Postgres), chunk: waitChunk}
		if err := l.connect(ctx); err != nil {
			return nil, err
		}
		return l, nil
	},
}

// Advisory is one client: one session, whose locks it tracks.
type Advisory struct {
	dsn   string
	chunk time.Duration // lock_timeout of one server-side wait
	mu    sync.Mutex    // one statement at a time on the connection
	conn  *pgx.Conn
	lost  chan struct{}  // closed when the session (and its locks) is gone
	held  map[string]int // leases this session holds per key (its locks are reentrant)
}

func checkKey(key string) error {
	if key == "" || len(key) > 1000 || !utf8.ValidString(key) || strings.ContainsRune(key, 0) {
		return fmt.Errorf("%w: postgres lock key must be 1..1000 bytes of UTF-8 without NUL", impls.ErrInvalidKey)
	}
	return nil
}

// connect opens the session; the caller holds mu (or owns l alone).
func (l *Advisory) connect(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(l.dsn)
	if err != nil {
		return fmt.Errorf("pg-advisory: %w", err)
	}
	cfg.RuntimeParams["lock_timeout"] = fmt.Sprint(l.chunk.Milliseconds())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return impls.DialOutcome(ctx, "pg-advisory", err)
	}
	l.conn, l.lost, l.held = conn, make(chan struct{}), map[string]int{}
	return nil
}

// sessionGone marks the session dead: its locks are gone with it.
func (l *Advisory) sessionGone() {
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
		close(l.lost)
	}
}

// exec runs one statement. A failure that is not a server error reply means
// the connection is unusable: the server ends the session and frees its locks.
func (l *Advisory) exec(ctx context.Context, sql string, args ...any) (bool, error) {
	if l.conn == nil {
		if err := l.connect(ctx); err != nil {
			return false, err
		}
	}
	var ok bool
	err := l.conn.QueryRow(ctx, sql, args...).Scan(&ok)
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		l.sessionGone()
	}
	return ok, err
}

// Acquire waits in the server's queue, in chunks of waitChunk.
func (l *Advisory) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	retried := false
	for {
		if err := impls.Expired(ctx); err != nil {
			return nil, impls.NotAcquiredBy(ctx)
		}
		lease, err := l.attempt(ctx, key, opt.Try)
		if errors.Is(err, errSessionLost) && (!retried || !opt.Try && ctx.Err() == nil) {
			// The session died under the request (a restarted or killed
			// server), or a new one could not be had within the attempt's
			// own time (a starved server took over 2 s to answer a new
			// connection): nothing is ours. Again on a new session: it
			// queues again, or finds the server unreachable (refused), or
			// a waiter goes on until its own deadline; a try asks once more.
			retried = true
			continue
		}
		if lease != nil || err != nil {
			return lease, err
		}
		if opt.Try {
			return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
		}
	}
}

func (l *Advisory) attempt(ctx context.Context, key string, try bool) (impls.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// The statement gets a little longer than the caller: lock_timeout ends
	// the wait first, and only a stalled network runs into this deadline.
	qctx, cancel := context.WithTimeout(context.Background(), l.chunk+2*time.Second)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl)+150*time.Millisecond < l.chunk+2*time.Second {
		cancel()
		qctx, cancel = context.WithDeadline(context.Background(), dl.Add(150*time.Millisecond))
	}
	defer cancel()
	had := l.held[key] > 0 // a re-entry: the session holds it already
	var ok bool
	var err error
	if try {
		ok, err = l.exec(qctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key)
	} else {
		_, err = l.exec(qctx, "SELECT pg_advisory_lock(hashtextextended($1, 0)) IS NULL", key)
		ok = err == nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" && l.held[key] == 0 {
		// lock_timeout can fire in the instant the lock is granted: the
		// server keeps the grant and still raises the error, and a session
		// lock outlives it. Ask whether the session holds the key (a key it
		// already held would have been granted at once, without a wait).
		ok, err = l.exec(qctx, grantedHere, key)
		if err == nil && !ok {
			return nil, nil // lock_timeout: still held; wait another chunk
		}
	}
	switch {
	case ok:
		l.held[key]++
		return &lease{l: l, key: key, lost: l.lost}, nil
	case err == nil:
		return nil, nil // try: held
	case errors.As(err, &pgErr) && pgErr.Code == "55P03":
		return nil, nil // lock_timeout: still held; wait another chunk
	case errors.Is(err, impls.ErrUnavailable):
		return nil, err
	case l.conn == nil:
		// The connection died mid-statement: the server ends the session,
		// so even a lock granted at the last moment is not ours.
		if impls.DialFailed(err) {
			return nil, fmt.Errorf("pg-advisory: %w: %w", impls.ErrUnavailable, err)
		}
		if had {
			// A re-entry: the hold it was to add to went with the session,
			// and one taken on a new session is no re-entry. Not retried.
			return nil, fmt.Errorf("pg-advisory %s: %w: %w: %w", key, impls.ErrNotAcquired, errHoldLost, err)
		}
		return nil, fmt.Errorf("pg-advisory %s: %w: %w: %w", key, impls.ErrNotAcquired, errSessionLost, err)
	default:
		return nil, fmt.Errorf("pg-advisory %s: %w: %w", key, impls.ErrUnavailable, err)
	}
}

// grantedHere asks whether this session holds the advisory lock on a key:
// a bigint key shows in pg_locks as its high half in classid and its low
// half in objid, with objsubid 1.
const grantedHere = `SELECT EXISTS (
	SELECT 1 FROM pg_locks, (SELECT hashtextextended($1, 0) AS h) k
	WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND objsubid = 1
	  AND classid::bigint = (k.h >> 32) & 4294967295 AND objid::bigint = k.h & 4294967295)`

// errSessionLost: the connection died under a request; the server ends the
// session, so no lock of it is ours.
var errSessionLost = errors.New("session lost")

// errHoldLost: the connection died under a re-entry; the session's hold of
// the key, which the re-entry was to add to, is gone with it.
var errHoldLost = errors.New("session lost, and the hold it had with it")

// Close drops the connection, as a crash would: the server frees the locks.
func (l *Advisory) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sessionGone()
	return nil
}

type lease struct {
	l        *Advisory
	key      string
	lost     chan struct{}
	mu       sync.Mutex
	released bool
}

func (s *lease) Key() string           { return s.key }
func (s *lease) Token() (uint64, bool) { return 0, false }
func (s *lease) ValidUntil() time.Time { return time.Time{} }
func (s *lease) Lost() <-chan struct{} { return s.lost }

func (s *lease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("pg-advisory holds while the session lives: %w", impls.ErrUnsupported)
}

// Release unlocks once (the session may hold the key more than once).
func (s *lease) Release(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	select {
	case <-s.lost:
		s.released = true
		return fmt.Errorf("release %s: %w: the session ended", s.key, impls.ErrNotHeld)
	default:
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if s.l.conn == nil {
		s.released = true
		return fmt.Errorf("release %s: %w: the session ended", s.key, impls.ErrNotHeld)
	}
	ok, err := s.l.exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", s.key)
	switch {
	case err != nil && s.l.conn == nil:
		// The connection went: the server frees the lock with the session.
		s.released = true
		return fmt.Errorf("release %s: %w: %w", s.key, impls.ErrIndeterminate, err)
	case err != nil:
		return fmt.Errorf("release %s: %w: %w", s.key, impls.ErrUnavailable, err)
	case !ok:
		s.released = true
		delete(s.l.held, s.key)
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	s.released = true
	if s.l.held[s.key]--; s.l.held[s.key] <= 0 {
		delete(s.l.held, s.key)
	}
	return nil
}

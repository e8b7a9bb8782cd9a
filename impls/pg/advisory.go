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
	Backend:  impls.Postgres,
	Caps:     impls.Capabilities{Blocking: true, Reentrant: true, FreedOnDisconnect: true},
	Safe:     true,
	Survives: "client crashes (the server frees the locks of a dead session); a restart frees every lock",
	Summary:  "SELECT pg_advisory_lock(hashtextextended(key, 0)) on a dedicated session",
	Fails:    "a dropped connection frees every lock of the session at once, and the holder learns it only at its next statement",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if env.Endpoints.Postgres == "" {
			return nil, fmt.Errorf("pg-advisory: no postgres endpoint")
		}
		l := &Advisory{dsn: env.Endpoints.Postgres}
		if err := l.connect(ctx); err != nil {
			return nil, err
		}
		return l, nil
	},
}

// Advisory is one client: one session, whose locks it tracks.
type Advisory struct {
	dsn  string
	mu   sync.Mutex // one statement at a time on the connection
	conn *pgx.Conn
	lost chan struct{} // closed when the session (and its locks) is gone
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
	cfg.RuntimeParams["lock_timeout"] = fmt.Sprint(waitChunk.Milliseconds())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pg-advisory: %w: %w", impls.ErrUnavailable, err)
	}
	l.conn, l.lost = conn, make(chan struct{})
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
	for {
		if err := impls.Expired(ctx); err != nil {
			return nil, impls.NotAcquiredBy(ctx)
		}
		lease, err := l.attempt(ctx, key, opt.Try)
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
	qctx, cancel := context.WithTimeout(context.Background(), waitChunk+2*time.Second)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl)+150*time.Millisecond < waitChunk+2*time.Second {
		cancel()
		qctx, cancel = context.WithDeadline(context.Background(), dl.Add(150*time.Millisecond))
	}
	defer cancel()
	var ok bool
	var err error
	if try {
		ok, err = l.exec(qctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key)
	} else {
		_, err = l.exec(qctx, "SELECT pg_advisory_lock(hashtextextended($1, 0)) IS NULL", key)
		ok = err == nil
	}
	var pgErr *pgconn.PgError
	switch {
	case ok:
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
		return nil, fmt.Errorf("pg-advisory %s: %w: session lost: %w", key, impls.ErrNotAcquired, err)
	default:
		return nil, fmt.Errorf("pg-advisory %s: %w: %w", key, impls.ErrUnavailable, err)
	}
}

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
		return fmt.Errorf("release %s: %w", s.key, impls.ErrNotHeld)
	}
	s.released = true
	return nil
}

// Package mysql holds the MySQL/MariaDB lock approaches, one file each.
package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	driver "github.com/go-sql-driver/mysql"

	"github.com/locklab/locklab/impls"
)

// Register adds every MySQL approach to r.
func Register(r *impls.Registry) {
	r.Register(InsertDeleteApproach)
	r.Register(InsertDeleteReaperApproach)
	r.Register(ForUpdateApproach)
	r.Register(OptimisticApproach)
	r.Register(ShardedApproach)
	r.Register(QueueFairApproach)
	r.Register(InsertDeleteReplicatedApproach)
	r.Register(ForUpdateReplicatedApproach)
	r.Register(ShardedReplicatedApproach)
	r.Register(InsertDeleteSemiSyncApproach)
	r.Register(ForUpdateSemiSyncApproach)
	r.Register(ShardedSemiSyncApproach)
}

// DefaultTTL is the lease length when AcquireOptions.TTL is zero.
const DefaultTTL = 10 * time.Second

// maxKeyLen is the lock_key column width (VARCHAR(255) utf8mb4).
const maxKeyLen = 255

func checkKey(key string) error {
	if key == "" || utf8.RuneCountInString(key) > maxKeyLen || !utf8.ValidString(key) {
		return fmt.Errorf("%w: mysql lock key must be 1..%d valid UTF-8 characters", impls.ErrInvalidKey, maxKeyLen)
	}
	return nil
}

// openWithSchema connects a client of approach name on server kind s
// (conns connections at most) and creates the approach's tables if they
// are missing.
func openWithSchema(ctx context.Context, name string, s impls.Server, env impls.Env, conns int, schema ...string) (*sql.DB, error) {
	dsns := env.Endpoints[s].DSNs
	if len(dsns) == 0 {
		return nil, fmt.Errorf("%s: no %s endpoint", name, s)
	}
	db, err := open(ctx, s, dsns, conns)
	if err != nil {
		return nil, err
	}
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil && !isContention(err) {
			db.Close()
			return nil, fmt.Errorf("%s: create table: %w", name, err)
		}
	}
	return db, nil
}

// execOne runs a statement that must change exactly one row of ours;
// no row means the lock is no longer ours. A statement InnoDB rolled back
// as a deadlock victim did nothing, so it is run again.
func execOne(ctx context.Context, db execer, op, key, query string, args ...any) error {
	res, err := execRetry(ctx, db, query, args...)
	if err != nil {
		return classify(ctx, op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return classify(ctx, op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s %s: %w", op, key, impls.ErrNotHeld)
	}
	return nil
}

// execRetry runs a statement, again while it fails for contention (InnoDB
// rolled it back as a deadlock victim, say): it did nothing then.
func execRetry(ctx context.Context, db execer, query string, args ...any) (sql.Result, error) {
	res, err := db.ExecContext(ctx, query, args...)
	for attempt := 0; attempt < 20 && err != nil && isContention(err) && ctx.Err() == nil; attempt++ {
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
		res, err = db.ExecContext(ctx, query, args...)
	}
	return res, err
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// replicated says whether s is a replicated topology, whose clients
// follow its primary.
func replicated(s impls.Server) bool { return s == impls.MySQLReplicated || s == impls.MySQLSemiSync }

// open gives one lock client its own connections (conns at most), as a
// separate process would have, and checks that the server answers: the
// one server of dsns, or the primary of a replicated topology.
func open(ctx context.Context, s impls.Server, dsns []string, conns int) (*sql.DB, error) {
	var nodes []sqldriver.Connector
	var addrs []string
	for _, dsn := range dsns {
		cfg, err := driver.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("mysql DSN: %w", err)
		}
		conn, err := driver.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("mysql DSN: %w", err)
		}
		nodes, addrs = append(nodes, conn), append(addrs, cfg.Addr)
	}
	conn := nodes[0]
	if replicated(s) {
		conn = &primaryConnector{nodes: nodes, addrs: addrs}
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql %s: %w: %w", strings.Join(addrs, ", "), impls.ErrUnavailable, err)
	}
	return db, nil
}

// Server errors that mean "someone else holds or is taking the lock".
const (
	errDuplicateKey = 1062 // ER_DUP_ENTRY
	errLockWait     = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement was rolled back
	errDeadlock     = 1213 // ER_LOCK_DEADLOCK: InnoDB chose this statement as the victim
)

// isContention reports an error after which the statement certainly did not
// take effect because of another client: concurrent INSERT and DELETE on one
// unique key take next-key locks that InnoDB often resolves as a deadlock.
func isContention(err error) bool {
	var me *driver.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case errDuplicateKey, errLockWait, errDeadlock:
		return true
	}
	return false
}

// classify maps a failed statement to the lab's outcomes: an error reply
// from the server or a failed dial changed nothing; a timeout or a broken
// connection after the statement went out is indeterminate.
func classify(ctx context.Context, op string, err error) error {
	var me *driver.MySQLError
	switch {
	case errors.As(err, &me):
		return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
	case impls.DialFailed(err), errors.Is(err, errNoPrimary):
		return impls.DialOutcome(ctx, op, err)
	case impls.Expired(ctx) != nil:
		// The deadline struck mid-command; the driver may report it as a
		// socket timeout, so say both.
		return fmt.Errorf("%s: %w: %w (%w)", op, impls.ErrIndeterminate, err, impls.Expired(ctx))
	default:
		return fmt.Errorf("%s: %w: %w", op, impls.ErrIndeterminate, err)
	}
}

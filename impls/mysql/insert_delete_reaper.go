package mysql

import (
	"context"
	"time"

	"github.com/locklab/locklab/impls"
)

// ReaperInterval is how often the monitor looks for expired rows.
const ReaperInterval = 100 * time.Millisecond

// InsertDeleteReaperApproach: insert/delete plus the classic fix for a
// crashed holder: a monitor deletes rows older than their TTL. It frees
// crashed holders, and just as readily a live holder that is slow: the
// holder is never told, and goes on as if it held the lock.
var InsertDeleteReaperApproach = impls.Approach{
	Name:     "mysql-insert-delete-reaper",
	Server:   impls.MySQL,
	Caps:     impls.Capabilities{TTL: true},
	Weak:     impls.Weaknesses{ReapsLiveHolder: true},
	Safe:     true,
	Survives: "client crashes (the monitor frees the row after its TTL), a MariaDB restart",
	Summary:  "INSERT with expires_at; a monitor DELETEs expired rows; owner-checked DELETE releases",
	Fails:    "the monitor deletes a slow but live holder's row: a second client gets the lock while the first still works",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		const table = "locklab_insert_delete_reaper"
		// Two connections: one for the client, one for its monitor.
		db, err := openWithSchema(ctx, "mysql-insert-delete-reaper", impls.MySQL, env, 2, insertDeleteSchema(table))
		if err != nil {
			return nil, err
		}
		mctx, stop := context.WithCancel(context.Background())
		l := &InsertDelete{db: db, clock: env.Clock, table: table, ttl: true, stop: stop}
		go func() {
			t := time.NewTicker(ReaperInterval)
			defer t.Stop()
			for {
				select {
				case <-mctx.Done():
					return
				case <-t.C:
					// Errors are the next tick's problem: a monitor that
					// misses a beat only frees locks a little later.
					_, _ = db.ExecContext(mctx, "DELETE FROM "+table+" WHERE expires_at < NOW(6)")
				}
			}
		}()
		return l, nil
	},
}

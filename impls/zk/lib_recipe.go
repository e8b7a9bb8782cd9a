package zk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/impls"
)

// tryBudget is how long a Try of a free lock gives the recipe at least,
// which has no non-blocking form (two round trips; a ZooKeeper starved at
// a load of 16 answered them in more than 100 ms). It gives four times
// what the try's own look at the lock's directory took, when that is
// more: beside two busy loops a free lock's recipe outran 500 ms.
const tryBudget = 500 * time.Millisecond

// errQueued: the lock's directory holds a node, a holder's or a waiter's.
var errQueued = errors.New("queued")

// RecipeApproach adapts go-zookeeper's own zk.Lock recipe, next to
// zk-sequential (the same algorithm). The recipe takes no context and has
// no try: the adapter runs it in the background, gives up when ctx ends,
// and releases a lock the recipe obtains after that.
var RecipeApproach = impls.Approach{
	Name:            "lib-zk-recipe",
	Server:          impls.ZooKeeper,
	Caps:            impls.Capabilities{Fair: true, Blocking: true, FaultTolerant: true},
	Safe:            true,
	CrashFreedAfter: SessionTimeout,
	Survives:        "as zk-sequential: client crashes, loss of a ZooKeeper minority",
	Summary:         "go-zookeeper zk.NewLock(...).Lock(): sequential nodes, watch the predecessor",
	Fails:           "no context, no try, no loss signal: a caller cannot stop waiting, and after a session expiry the holder is not told",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		s, err := connect(ctx, env.Clock, env.Endpoints[impls.ZooKeeper].Addrs)
		if err != nil {
			return nil, err
		}
		return &Recipe{s: s}, nil
	},
}

// Recipe is one client of the adapter.
type Recipe struct{ s *session }

// Acquire runs the recipe until it returns or ctx (or the try budget) ends.
func (l *Recipe) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	name, err := escapeKey(key)
	if err != nil {
		return nil, err
	}
	path := root + "/recipe/" + name
	var budget time.Duration
	if opt.Try {
		// A lock with a node in its directory is refused without joining
		// its queue: a try queued behind the holder would stay queued
		// after giving up (the recipe cannot be stopped) and take the lock
		// ahead of the next try. Sync first: the ensemble member this
		// client reads from may not yet have applied the last release.
		looked := time.Now()
		err := l.s.do(ctx, func() error {
			if _, err := l.s.conn.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			kids, _, err := l.s.conn.Children(path)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				return nil
			case err == nil && len(kids) > 0:
				return errQueued
			}
			return err
		}, nil)
		switch {
		case errors.Is(err, errQueued):
			return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
		case err != nil:
			return nil, outcome("lock "+key, err)
		}
		budget = max(tryBudget, 4*time.Since(looked))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	lock := zk.NewLock(l.s.conn, path, openACL)
	err = l.s.do(ctx, lock.Lock, func(err error) {
		if err == nil {
			_ = lock.Unlock() // obtained after we gave up: give it back
		}
	})
	switch {
	case err == nil:
		return &recipeLease{key: key, lock: lock, s: l.s, sid: l.s.sessionID()}, nil
	case opt.Try && errors.Is(err, impls.ErrIndeterminate):
		return nil, fmt.Errorf("%w: %s is held (waited %v)", impls.ErrNotAcquired, key, budget)
	default:
		return nil, outcome("lock "+key, err)
	}
}

// Close drops the connection as a crash would.
func (l *Recipe) Close() error { return l.s.Close() }

type recipeLease struct {
	key  string
	mu   sync.Mutex
	lock *zk.Lock
	s    *session
	sid  int64 // the session the lock was taken in
}

func (r *recipeLease) Key() string           { return r.key }
func (r *recipeLease) Token() (uint64, bool) { return 0, false }

// ValidUntil is the holder's belief: last heard from the ensemble in the
// lock's session, plus the session timeout (the recipe itself tells the
// holder nothing).
func (r *recipeLease) ValidUntil() time.Time { return r.s.validUntil(r.sid) }
func (r *recipeLease) Lost() <-chan struct{} { return nil }

func (r *recipeLease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("zk.Lock lives as long as the session: %w", impls.ErrUnsupported)
}

// Release runs the recipe's Unlock (which deletes its node, unconditionally).
func (r *recipeLease) Release(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- r.lock.Unlock() }()
	select {
	case err := <-done:
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNotLocked), errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("release %s: %w", r.key, impls.ErrNotHeld)
		default:
			return outcome("release "+r.key, err)
		}
	case <-ctx.Done():
		return fmt.Errorf("release %s: %w: %w", r.key, impls.ErrIndeterminate, context.Cause(ctx))
	}
}

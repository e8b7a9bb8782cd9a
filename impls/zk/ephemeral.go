package zk

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/impls"
)

// EphemeralApproach: one ephemeral node per key. Whoever creates it holds
// the lock; everyone else watches it and races again when it goes (every
// waiter wakes at once: the herd effect). The node dies with the holder's
// session, so a crashed holder frees the lock after the session timeout.
var EphemeralApproach = impls.Approach{
	Name:            "zk-ephemeral",
	Server:          impls.ZooKeeper,
	Caps:            impls.Capabilities{Blocking: true, FaultTolerant: true, LossSignal: true},
	Safe:            true,
	CrashFreedAfter: SessionTimeout,
	Survives:        "client crashes (session expiry), loss of a ZooKeeper minority",
	Summary:         "create one ephemeral node; waiters watch it and race again when it is deleted",
	Fails:           "a holder paused past its session timeout keeps working after its node is gone (it learns only from the loss signal); every release wakes all waiters",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		s, err := connectUnder(ctx, env.Clock, env.Endpoints[impls.ZooKeeper].Addrs, root+"/ephemeral")
		if err != nil {
			return nil, err
		}
		return &Ephemeral{s: s}, nil
	},
}

// Ephemeral is one client of the approach.
type Ephemeral struct{ s *session }

// Acquire creates the node, or watches it and tries again when it goes.
func (l *Ephemeral) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	name, err := escapeKey(key)
	if err != nil {
		return nil, err
	}
	path := root + "/ephemeral/" + name
	token := impls.NewToken()
	for {
		lost := l.s.lostChan()
		err := l.s.do(ctx, func() error {
			_, err := l.s.conn.Create(path, []byte(token), zk.FlagEphemeral, openACL)
			if errors.Is(err, zk.ErrConnectionClosed) {
				// The create may have landed before the connection went:
				// after reconnecting, look for our token.
				if data, _, gerr := l.s.conn.Get(path); gerr == nil && string(data) == token {
					return nil
				}
			}
			return err
		}, func(err error) {
			// We gave up; if the create landed after all, undo it.
			if err == nil || errors.Is(err, zk.ErrConnectionClosed) {
				_ = l.s.deleteIfOurs(path, token)
			}
		})
		switch {
		case err == nil:
			return &zkLease{s: l.s, key: key, path: path, token: token, lost: lost, sid: l.s.sessionID()}, nil
		case errors.Is(err, zk.ErrSessionExpired):
			continue // the node, if created, died with the session
		case !errors.Is(err, zk.ErrNodeExists):
			return nil, outcome("create "+key, err)
		}
		if opt.Try {
			return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
		}
		var watch <-chan zk.Event
		var exists bool
		err = l.s.do(ctx, func() error {
			var err error
			exists, _, watch, err = l.s.conn.ExistsW(path)
			return err
		}, nil)
		if err != nil {
			if errors.Is(err, impls.ErrIndeterminate) {
				return nil, impls.NotAcquiredBy(ctx) // a read: nothing to be unsure about
			}
			return nil, outcome("watch "+key, err)
		}
		if !exists {
			continue
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return nil, impls.NotAcquiredBy(ctx)
		}
	}
}

// Close drops the connection as a crash would.
func (l *Ephemeral) Close() error { return l.s.Close() }

// The adapter of etcd's concurrency.Mutex as go.etcd.io/etcd/client/v3
// v3.5.0 ships it (the first release of the client as a module of its own):
// a session (a lease kept alive) per acquire, Lock on it (TryLock for one
// attempt), Unlock and the session's close on release.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/locklab/locklab/regressions/goadapter"
)

func main() {
	goadapter.Run(func(h goadapter.Hello) (goadapter.Locker, error) {
		c, err := clientv3.New(clientv3.Config{Endpoints: h.Servers["etcd"], DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, err
		}
		return &locker{c: c}, nil
	})
}

type locker struct{ c *clientv3.Client }

func (l *locker) Acquire(ctx context.Context, key string, ttl time.Duration, try bool) (goadapter.Held, error) {
	s, err := concurrency.NewSession(l.c, concurrency.WithTTL(seconds(ttl)), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	m := concurrency.NewMutex(s, "/locklab/lock/"+key)
	lock := m.Lock
	if try {
		lock = m.TryLock
	}
	if err := lock(ctx); err != nil {
		// Revoking the lease deletes the waiter's key, wherever the Lock
		// stopped: then it certainly holds nothing.
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, rerr := l.c.Revoke(rctx, s.Lease()); rerr == nil || errors.Is(err, concurrency.ErrSessionExpired) {
			return nil, fmt.Errorf("lock: %w: %w", goadapter.ErrNotAcquired, err)
		}
		if errors.Is(err, concurrency.ErrLocked) {
			return nil, fmt.Errorf("lock: %w: %w", goadapter.ErrNotAcquired, err)
		}
		return nil, fmt.Errorf("lock: %w", err)
	}
	return &held{m: m, s: s}, nil
}

// seconds is etcd's lease TTL for ttl: whole seconds, at least 1.
func seconds(ttl time.Duration) int {
	if ttl <= 0 {
		return 2
	}
	return int((ttl + time.Second - 1) / time.Second)
}

type held struct {
	m *concurrency.Mutex
	s *concurrency.Session
}

func (h *held) Release(ctx context.Context) error {
	if err := h.m.Unlock(ctx); err != nil {
		return err
	}
	h.s.Close()
	return nil
}

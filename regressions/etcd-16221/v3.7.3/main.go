// The adapter of etcd's experimental RWMutex recipe (go.etcd.io/etcd/client/v3
// v3.7.3, experimental/recipes) used as a mutex: a session (a lease kept
// alive) per acquire, the recipe's Lock (the writer's side) on it, Unlock
// and the session's close on release.
package main

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
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
	if try {
		return nil, fmt.Errorf("the recipe has no try: %w", goadapter.ErrUnsupported)
	}
	ttlSec := 2
	if ttl > 0 {
		ttlSec = int((ttl + time.Second - 1) / time.Second)
	}
	s, err := concurrency.NewSession(l.c, concurrency.WithTTL(ttlSec), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	m := recipe.NewRWMutex(s, "/locklab/rwlock/"+key)
	// Lock takes no context: past the deadline the session is revoked,
	// which deletes the writer's key and ends the wait.
	done := make(chan error, 1)
	go func() { done <- m.Lock() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, rerr := l.c.Revoke(rctx, s.Lease()); rerr == nil {
			return nil, fmt.Errorf("lock: %w: %w", goadapter.ErrNotAcquired, err)
		}
		return nil, fmt.Errorf("lock: %w", err)
	}
	return &held{m: m, s: s}, nil
}

type held struct {
	m *recipe.RWMutex
	s *concurrency.Session
}

func (h *held) Release(context.Context) error {
	if err := h.m.Unlock(); err != nil {
		return err
	}
	h.s.Close()
	return nil
}

// The adapter of go-zookeeper's lock recipe, zk.Lock, as
// github.com/go-zookeeper/zk v1.0.4 ships it: one connection (one session)
// per client, as an application keeps it, and a zk.Lock per acquire, Lock to
// take it, Unlock to release it. Nothing of the recipe is redone here.
package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/regressions/goadapter"
)

// quiet drops the library's log lines: locklab reads the adapter's stderr
// only for a failed start.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func main() {
	goadapter.Run(func(h goadapter.Hello) (goadapter.Locker, error) {
		timeout := 2 * time.Second
		if ms, ok := h.Options["session_timeout_ms"].(float64); ok && ms > 0 {
			timeout = time.Duration(ms) * time.Millisecond
		}
		c, events, err := zk.Connect(h.Servers["zookeeper"], timeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
		// The library drops events nobody reads; reading them keeps the
		// channel from filling all the same.
		go func() {
			for range events {
			}
		}()
		return &locker{c: c}, nil
	})
}

type locker struct{ c *zk.Conn }

// Acquire runs the recipe's Lock, which takes no context and has no single
// attempt: if locklab stops waiting first, the lock the recipe obtains later
// is given back.
func (l *locker) Acquire(ctx context.Context, key string, _ time.Duration, try bool) (goadapter.Held, error) {
	if try {
		return nil, fmt.Errorf("zk.Lock has no single attempt: %w", goadapter.ErrUnsupported)
	}
	lock := zk.NewLock(l.c, path.Join("/locklab/gozk", key), zk.WorldACL(zk.PermAll))
	done := make(chan error, 1)
	go func() { done <- lock.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", key, err)
		}
		return &held{lock: lock}, nil
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				_ = lock.Unlock()
			}
		}()
		return nil, fmt.Errorf("lock %s: %w", key, context.Cause(ctx))
	}
}

type held struct{ lock *zk.Lock }

// Release runs the recipe's Unlock: a delete of its node, any version.
func (h *held) Release(context.Context) error {
	err := h.lock.Unlock()
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNotLocked) {
		return fmt.Errorf("unlock: %w: %w", goadapter.ErrNotHeld, err)
	}
	return err
}

// The adapter of etcd's leader election, concurrency.Election, as
// go.etcd.io/etcd/client/v3 v3.7.3 ships it, used as a lock whose holder is
// the leader: a session (a lease kept alive) per acquire, Campaign on it,
// Resign and the session's close on release.
package main

import (
	"context"
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
		return &elector{c: c}, nil
	})
}

type elector struct{ c *clientv3.Client }

func (l *elector) Acquire(ctx context.Context, key string, ttl time.Duration, try bool) (goadapter.Held, error) {
	if try {
		return nil, fmt.Errorf("an election has no single attempt: %w", goadapter.ErrUnsupported)
	}
	ttlSec := 2
	if ttl > 0 {
		ttlSec = int((ttl + time.Second - 1) / time.Second)
	}
	s, err := concurrency.NewSession(l.c, concurrency.WithTTL(ttlSec), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	e := concurrency.NewElection(s, "/locklab/election/"+key)
	if err := e.Campaign(ctx, "leader"); err != nil {
		// Revoking the lease deletes the candidate's key, wherever the
		// campaign stopped: then it certainly leads nothing.
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, rerr := l.c.Revoke(rctx, s.Lease()); rerr == nil {
			return nil, fmt.Errorf("campaign: %w: %w", goadapter.ErrNotAcquired, err)
		}
		return nil, fmt.Errorf("campaign: %w", err)
	}
	return &leader{e: e, s: s}, nil
}

type leader struct {
	e *concurrency.Election
	s *concurrency.Session
}

func (h *leader) Release(ctx context.Context) error {
	if err := h.e.Resign(ctx); err != nil {
		return err
	}
	h.s.Close()
	return nil
}

package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/workload"
)

// connectTimeout bounds connecting one case's clients.
const connectTimeout = 30 * time.Second

// newClient connects one client recording as process proc, with its own
// connections, doing lease arithmetic on clk (its slot's clock, which chaos
// may skew and which outlives replacements).
func newClient(ctx context.Context, a impls.Approach, ep impls.Endpoints, clk *clock.Skewable, proc int) (workload.Client, error) {
	l, err := a.New(ctx, impls.Env{Endpoints: ep, Clock: clk, ClientID: proc})
	if err != nil {
		return workload.Client{}, err
	}
	return workload.Client{Locker: l, Clock: clk}, nil
}

// newClients connects n goroutine clients through connect, in parallel (at
// most 16 at a time): slot i records as process procBase+i.
func newClients(ctx context.Context, n, procBase int, connect workload.Connect) ([]workload.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	clients := make([]workload.Client, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			clients[i], errs[i] = connect(ctx, i, procBase+i)
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clients {
			if c.Locker != nil {
				c.Locker.Close()
			}
		}
		for _, e := range errs {
			if e != nil {
				return nil, infraErr(fmt.Errorf("connect clients: %w", e))
			}
		}
	}
	return clients, nil
}

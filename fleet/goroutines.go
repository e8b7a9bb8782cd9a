package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/workload"
)

// connectTimeout bounds connecting one case's clients.
const connectTimeout = 30 * time.Second

// goroutines are clients in locklab's own process, one goroutine each: a
// client retired after an indeterminate outcome is replaced by a fresh
// lock client under a new process id, in the same slot.
type goroutines struct {
	cfg     Config
	clocks  []*clock.Skewable // the slots' lease clocks, which chaos may skew and which outlive replacements
	clients []workload.Client // the slots' clients now (workload.Run puts replacements here)
	// own are the slots as processes, when each client is a process of
	// its own (impls.Approach.OwnProcess); nil otherwise.
	own []*ownSlot
	// finish ends the run early (Finish), through Workload.Finish.
	finish func()
}

func newGoroutines(ctx context.Context, cfg Config) (*goroutines, error) {
	g := &goroutines{cfg: cfg, clocks: make([]*clock.Skewable, cfg.Workload.Clients)}
	finish := make(chan struct{})
	g.cfg.Workload.Finish, g.finish = finish, sync.OnceFunc(func() { close(finish) })
	for i := range g.clocks {
		g.clocks[i] = &clock.Skewable{}
	}
	if cfg.Approach.OwnProcess {
		rec := g.cfg.Recorder
		filter := newCrashFilter(rec)
		g.cfg.Recorder = filter
		if g.cfg.Workload.Store != nil {
			g.cfg.Workload.Store = crashStore{Resource: g.cfg.Workload.Store, filter: filter}
		}
		for i := range g.clocks {
			g.own = append(g.own, &ownSlot{index: i, now: cfg.Mono.Nanos, rec: rec, filter: filter})
		}
	}
	timeout := max(connectTimeout, cfg.Approach.StartTimeout+5*time.Second)
	clients, err := connectAll(ctx, timeout, len(g.clocks), cfg.Workload.ProcBase, g.connect)
	if err != nil {
		return nil, err
	}
	g.clients = clients
	return g, nil
}

// connect makes slot's client recording as process proc, with its own
// connections, doing lease arithmetic on its slot's clock.
func (g *goroutines) connect(ctx context.Context, slot, proc int) (workload.Client, error) {
	ep, err := g.cfg.endpoints(slot)
	if err != nil {
		return workload.Client{}, err
	}
	g.cfg.bind(proc, slot)
	clk := g.clocks[slot]
	l, err := g.cfg.Approach.New(ctx, impls.Env{Endpoints: ep, Clock: clk, ClientID: proc, LogDir: g.cfg.Dir, ProcessClock: g.cfg.ProcessClocks})
	if err != nil {
		return workload.Client{}, err
	}
	if g.own != nil {
		g.own[slot].hold(proc, l)
		return workload.Client{Locker: l, Clock: clk, Halt: &g.own[slot].halt}, nil
	}
	return workload.Client{Locker: l, Clock: clk}, nil
}

func (g *goroutines) Slots() []Slot {
	out := make([]Slot, len(g.clocks))
	for i, c := range g.clocks {
		out[i] = Slot{Index: i, Clock: c}
		if g.own != nil {
			out[i].Process = g.own[i]
		}
	}
	return out
}

func (g *goroutines) Run(ctx context.Context) (workload.Stats, error) {
	if g.own != nil && g.cfg.Stall != nil {
		defer g.watchAdapters(ctx)()
	}
	return workload.Run(ctx, g.cfg.Workload, g.clients, g.connect, g.cfg.Recorder, g.cfg.Mono, g.cfg.Progress)
}

// watchAdapters watches the slots' client processes (adapters) for their
// threads' waits for a CPU (stall.Runqueue) until the returned stop is
// called, and records each as a stall of that client ("adapter 3"): a
// starved adapter hears of its lost session late, as a paused one does,
// and its worker's probe, or locklab's, cannot see it (beside two busy
// loops a Curator adapter led on for 2.6 s after its session had gone).
func (g *goroutines) watchAdapters(ctx context.Context) (stop func()) {
	type processes interface{ Processes() []int }
	list := func() map[string][]int {
		procs := map[string][]int{}
		for _, s := range g.own {
			s.mu.Lock()
			proc, l := s.proc, s.locker
			s.mu.Unlock()
			if p, ok := l.(processes); ok {
				if pids := p.Processes(); len(pids) > 0 {
					procs[fmt.Sprintf("adapter %d", proc)] = pids
				}
			}
		}
		return procs
	}
	rec := g.cfg.Recorder
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Listed again each second: a replaced client is a new process.
		stall.Runqueue{Threshold: g.cfg.Stall.Threshold, ListEvery: time.Second}.Run(ctx, g.cfg.Mono.Nanos, list, func(who string, s stall.Span) {
			rec.Record(history.StallEvent(who, s.Start, s.End))
		})
	}()
	return func() { cancel(); <-done }
}

func (g *goroutines) Finish() { g.finish() }

func (g *goroutines) Close() {
	for _, c := range g.clients {
		if c.Locker != nil {
			c.Locker.Close()
		}
	}
}

// connectFirst is a first client's connect, tried again while the server
// is unavailable (startAgain): on a starved machine its first requests may
// time out.
func connectFirst(ctx context.Context, connect workload.Connect, slot, proc int) (c workload.Client, err error) {
	startAgain(ctx, func(int) bool {
		c, err = connect(ctx, slot, proc)
		return errors.Is(err, impls.ErrUnavailable)
	})
	return c, err
}

// connectAll connects n clients through connect, in parallel (at most 16
// at a time), within timeout: slot i records as process procBase+i.
func connectAll(ctx context.Context, timeout time.Duration, n, procBase int, connect workload.Connect) ([]workload.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
			clients[i], errs[i] = connectFirst(ctx, connect, i, procBase+i)
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
				return nil, fmt.Errorf("connect clients: %w", e)
			}
		}
	}
	return clients, nil
}

package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
)

// Stamper gives history timestamps (CLOCK_MONOTONIC ns).
type Stamper interface {
	Nanos() int64
}

// Progress is a live count, readable while the workload runs.
type Progress struct {
	Acquired atomic.Int64
}

// Client is one workload client: its lock client and its own clock (the
// one its Locker does lease arithmetic with).
type Client struct {
	Locker impls.Locker
	Clock  clock.Clock
	// Halt, when set, stops the client's own steps while a fault pauses
	// its lock library's process (see Halt).
	Halt *Halt
}

// Connect makes a fresh client for slot i, recording as process proc: the
// replacement of a client retired after an indeterminate outcome.
type Connect func(ctx context.Context, slot, proc int) (Client, error)

// Run drives clients[i] as client i until the duration ends or ctx is
// cancelled. Held leases are released before it returns.
//
// A client whose operation came back indeterminate issues nothing further
// (Jepsen's rule: its operation may take effect at any later time). With
// connect set it is replaced, as Jepsen's interpreter does: its lock client
// is closed like a crashed one (its lock, if the operation took effect, is
// left to the server) and a fresh client takes its slot under a new
// process id, so the population does not drain under faults. Without
// connect the slot stays empty. A client whose process was killed
// (impls.ErrCrashed) is replaced the same way.
//
// A lock client that reports itself broken (impls.ErrBrokenClient) ends
// the run: Run returns that error with what was measured.
func Run(ctx context.Context, spec Spec, clients []Client, connect Connect, rec history.Recorder, clk Stamper, prog *Progress) (Stats, error) {
	spec, err := spec.forRun(len(clients))
	if err != nil {
		return Stats{}, err
	}
	if prog == nil {
		prog = &Progress{}
	}
	// runCtx ends the run: no new cycle starts after it. opCtx, a little
	// later, ends operations: cutting a command in flight at the end of the
	// run would turn a clean outcome into an indeterminate one. A Ctrl-C
	// (ctx) ends both at once.
	runCtx, cancel := context.WithTimeout(ctx, spec.Duration)
	defer cancel()
	opCtx, cancelOps := context.WithTimeout(ctx, spec.Duration+spec.Drain)
	defer cancelOps()
	if spec.Finish != nil {
		defer finishEarly(spec.Finish, spec.Drain, cancel, cancelOps)()
	}
	d := &driver{spec: spec, clients: clients, connect: connect, rec: rec, clk: clk, prog: prog, keys: keyNames(spec),
		runCtx: runCtx, opCtx: opCtx, cancel: func() { cancel(); cancelOps() }}
	return d.run()
}

// forRun is s checked for a run on n lock clients, its defaults filled in.
func (s Spec) forRun(n int) (Spec, error) {
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	if n != s.Clients {
		return Spec{}, fmt.Errorf("%d lock clients for %d clients", n, s.Clients)
	}
	if s.AcquireTimeout == 0 {
		s.AcquireTimeout = 10 * time.Second
	}
	if s.Drain == 0 {
		s.Drain = time.Second
	}
	return s, nil
}

// keyNames are the run's lock keys.
func keyNames(spec Spec) []string {
	keys := make([]string, spec.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%sk%d", spec.KeyPrefix, i)
	}
	return keys
}

// finishEarly ends the run when finish closes: no new cycle starts, and
// operations are cut drain later. Call the returned stop when the run is
// over.
func finishEarly(finish <-chan struct{}, drain time.Duration, cancel, cancelOps context.CancelFunc) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-finish:
			cancel()
			t := time.AfterFunc(drain, cancelOps)
			<-done
			t.Stop()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// driver is one Run: its clients, one goroutine per slot, and what ends
// them.
type driver struct {
	spec    Spec
	clients []Client
	connect Connect
	rec     history.Recorder
	clk     Stamper
	prog    *Progress
	keys    []string

	runCtx, opCtx context.Context
	cancel        func() // ends the run and its operations at once

	brokenOnce sync.Once
	broken     error
	nextProc   atomic.Int64 // the process id of the next replacement
}

// run drives every slot until the run ends and sums up what they measured.
func (d *driver) run() (Stats, error) {
	start := time.Now()
	d.nextProc.Store(int64(d.spec.ProcBase + d.spec.Clients))
	results := make([]Stats, d.spec.Clients)
	var wg sync.WaitGroup
	for i := range d.clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = d.drive(i, start)
		}(i)
	}
	wg.Wait()
	total := Stats{Acquire: NewHistogram(), Release: NewHistogram(), Elapsed: time.Since(start)}
	for _, r := range results {
		if r.Acquire != nil {
			total.Merge(r)
		}
	}
	total.Procs = int(d.nextProc.Load()) - d.spec.ProcBase
	return total, d.broken
}

// fatal ends the run for everyone: a broken lock client (an adapter that
// broke its protocol) said nothing that can be judged.
func (d *driver) fatal(err error) {
	d.brokenOnce.Do(func() {
		d.broken = err
		d.cancel()
	})
}

// drive runs slot i until the run ends: its client, then each replacement
// of one retired.
func (d *driver) drive(i int, start time.Time) Stats {
	st := Stats{Acquire: NewHistogram(), Release: NewHistogram()}
	cl, proc := d.clients[i], d.spec.ProcBase+i
	var due *schedule
	if d.spec.Rate > 0 {
		// Client i takes arrivals i, i+C, i+2C, ... of the run's.
		gap := time.Duration(float64(time.Second) / d.spec.Rate)
		due = &schedule{next: start.Add(time.Duration(i) * gap), every: time.Duration(d.spec.Clients) * gap}
	}
	for seq := uint64(0); ; seq++ {
		c := d.client(cl, i, proc, seq, due)
		if retired := c.run(d.runCtx, d.opCtx, &st); !retired || d.connect == nil || d.runCtx.Err() != nil {
			return st
		}
		// Retire: drop the connections as a crash would (the lock, if the
		// operation took effect, is left to the server), then replace
		// under a new process id.
		_ = cl.Locker.Close()
		proc = int(d.nextProc.Add(1) - 1)
		next, ok := d.replace(i, proc, &st)
		if !ok {
			d.clients[i] = Client{}
			return st
		}
		st.Replaced++
		cl, d.clients[i] = next, next
	}
}

// client is cl's seq'th turn in slot i, as process proc.
func (d *driver) client(cl Client, i, proc int, seq uint64, due *schedule) *client {
	own := cl.Clock
	if own == nil {
		own = &clock.Skewable{}
	}
	return &client{spec: d.spec, proc: proc, locker: cl.Locker, own: own, halt: cl.Halt, rec: d.rec, clk: d.clk, keys: d.keys, prog: d.prog, due: due, fatal: d.fatal,
		rng: rand.New(rand.NewPCG(d.spec.Seed, uint64(i)<<32|seq))}
}

// replace connects slot i's next client as process proc; false: the run
// ended first, or the lock client broke.
func (d *driver) replace(i, proc int, st *Stats) (Client, bool) {
	next, err := d.connect(d.runCtx, i, proc)
	for err != nil {
		if errors.Is(err, impls.ErrBrokenClient) {
			d.fatal(fmt.Errorf("replace client %d: %w", i, err))
			return Client{}, false
		}
		// The server may be down (the fault that retired the client): try
		// again, as a restarted client would, until the run ends.
		st.Errors++
		if st.FirstError == "" {
			st.FirstError = "replace client: " + err.Error()
		}
		if errors.Is(err, impls.ErrUnavailable) || !errors.Is(err, context.Canceled) {
			st.Unavailable++
		}
		if sleepCtx(d.runCtx, 100*time.Millisecond) != nil {
			return Client{}, false
		}
		next, err = d.connect(d.runCtx, i, proc)
	}
	return next, true
}

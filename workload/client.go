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
	if err := spec.Validate(); err != nil {
		return Stats{}, err
	}
	if len(clients) != spec.Clients {
		return Stats{}, fmt.Errorf("%d lock clients for %d clients", len(clients), spec.Clients)
	}
	if spec.AcquireTimeout == 0 {
		spec.AcquireTimeout = 10 * time.Second
	}
	if spec.Drain == 0 {
		spec.Drain = time.Second
	}
	if prog == nil {
		prog = &Progress{}
	}
	keys := make([]string, spec.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%sk%d", spec.KeyPrefix, i)
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
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-spec.Finish:
				cancel()
				t := time.AfterFunc(spec.Drain, cancelOps)
				<-stop
				t.Stop()
			case <-stop:
			}
		}()
	}
	// A broken lock client (an adapter that broke its protocol) ends the
	// run for everyone: nothing it said can be judged.
	var brokenOnce sync.Once
	var broken error
	fatal := func(err error) {
		brokenOnce.Do(func() {
			broken = err
			cancel()
			cancelOps()
		})
	}
	start := time.Now()
	var nextProc atomic.Int64
	nextProc.Store(int64(spec.ProcBase + spec.Clients))
	results := make([]Stats, spec.Clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			st := Stats{Acquire: NewHistogram(), Release: NewHistogram()}
			defer func() { results[i] = st }()
			cl, proc := clients[i], spec.ProcBase+i
			var due *schedule
			if spec.Rate > 0 {
				// Client i takes arrivals i, i+C, i+2C, ... of the run's.
				gap := time.Duration(float64(time.Second) / spec.Rate)
				due = &schedule{next: start.Add(time.Duration(i) * gap), every: time.Duration(spec.Clients) * gap}
			}
			for seq := uint64(0); ; seq++ {
				own := cl.Clock
				if own == nil {
					own = &clock.Skewable{}
				}
				c := client{spec: spec, proc: proc, locker: cl.Locker, own: own, halt: cl.Halt, rec: rec, clk: clk, keys: keys, prog: prog, due: due, fatal: fatal,
					rng: rand.New(rand.NewPCG(spec.Seed, uint64(i)<<32|seq))}
				if retired := c.run(runCtx, opCtx, &st); !retired || connect == nil || runCtx.Err() != nil {
					return
				}
				// Retire: drop the connections as a crash would (the lock,
				// if the operation took effect, is left to the server), then
				// replace under a new process id.
				_ = cl.Locker.Close()
				proc = int(nextProc.Add(1) - 1)
				next, err := connect(runCtx, i, proc)
				for err != nil {
					if errors.Is(err, impls.ErrBrokenClient) {
						fatal(fmt.Errorf("replace client %d: %w", i, err))
						clients[i] = Client{}
						return
					}
					// The server may be down (the fault that retired the
					// client): try again, as a restarted client would,
					// until the run ends.
					st.Errors++
					if st.FirstError == "" {
						st.FirstError = "replace client: " + err.Error()
					}
					if errors.Is(err, impls.ErrUnavailable) || !errors.Is(err, context.Canceled) {
						st.Unavailable++
					}
					if sleepCtx(runCtx, 100*time.Millisecond) != nil {
						clients[i] = Client{}
						return
					}
					next, err = connect(runCtx, i, proc)
				}
				st.Replaced++
				cl, clients[i] = next, next
			}
		}(i)
	}
	wg.Wait()
	total := Stats{Acquire: NewHistogram(), Release: NewHistogram(), Elapsed: time.Since(start)}
	for _, r := range results {
		if r.Acquire != nil {
			total.Merge(r)
		}
	}
	total.Procs = int(nextProc.Load()) - spec.ProcBase
	return total, broken
}

package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
)

// Recorder takes every event of the workload (a history writer, a checker,
// or both).
type Recorder interface {
	Record(history.Event) history.Event
}

// Clock gives history timestamps (CLOCK_MONOTONIC ns).
type Clock interface {
	Nanos() int64
}

// MutexConfig is the mutex contention workload: C clients, each with its
// own connection(s), acquire one of K keys at random, hold it for a drawn
// time, release it, and start over, until Duration has passed.
type MutexConfig struct {
	Clients        int
	Keys           int
	Hold           Dist
	TTL            time.Duration // lease length asked of TTL approaches
	Duration       time.Duration
	Seed           uint64
	AcquireTimeout time.Duration // how long one acquire may wait (default 10s)
	Drain          time.Duration // after Duration, how long waiters may still wait (default 1s)
	KeyPrefix      string        // keys are KeyPrefix + "k" + index
	ProcBase       int           // client i records as process ProcBase+i
}

// Validate reports the first unusable setting.
func (c MutexConfig) Validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("clients must be at least 1, got %d", c.Clients)
	case c.Keys < 1:
		return fmt.Errorf("keys must be at least 1, got %d", c.Keys)
	case c.Duration <= 0:
		return fmt.Errorf("duration must be positive, got %v", c.Duration)
	case c.TTL < 0:
		return fmt.Errorf("ttl must not be negative, got %v", c.TTL)
	}
	return nil
}

// Latency histograms cover 1 µs to 5 min at 3 significant digits.
const (
	histMin = 1_000
	histMax = int64(5 * time.Minute)
)

// NewHistogram returns a latency histogram in nanoseconds.
func NewHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, 3) }

// MutexStats is what the workload measured.
type MutexStats struct {
	Acquire, Release *hdrhistogram.Histogram // ns, successful operations only
	Acquired         int64                   // acquires that returned a lease
	NotAcquired      int64                   // gave up waiting (timeout or end of run)
	Indeterminate    int64                   // acquires and releases with unknown outcome
	Errors           int64                   // unavailable and other failures
	ReleaseNotHeld   int64                   // releases refused: the lease was already gone
	Elapsed          time.Duration
	FirstError       string
}

// Progress is a live count, readable while the workload runs.
type Progress struct {
	Acquired atomic.Int64
}

// RunMutex drives lockers[i] as client i until the duration ends or ctx is
// cancelled. Held leases are released before it returns.
func RunMutex(ctx context.Context, cfg MutexConfig, lockers []impls.Locker, rec Recorder, clk Clock, prog *Progress) (MutexStats, error) {
	if err := cfg.Validate(); err != nil {
		return MutexStats{}, err
	}
	if len(lockers) != cfg.Clients {
		return MutexStats{}, fmt.Errorf("%d lockers for %d clients", len(lockers), cfg.Clients)
	}
	if cfg.AcquireTimeout == 0 {
		cfg.AcquireTimeout = 10 * time.Second
	}
	if cfg.Drain == 0 {
		cfg.Drain = time.Second
	}
	if prog == nil {
		prog = &Progress{}
	}
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%sk%d", cfg.KeyPrefix, i)
	}
	// runCtx ends the run: no new cycle starts after it. opCtx, a little
	// later, ends operations: cutting a command in flight at the end of the
	// run would turn a clean outcome into an indeterminate one. A Ctrl-C
	// (ctx) ends both at once.
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	opCtx, cancelOps := context.WithTimeout(ctx, cfg.Duration+cfg.Drain)
	defer cancelOps()
	start := time.Now()
	results := make([]MutexStats, cfg.Clients)
	var wg sync.WaitGroup
	for i := range lockers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := client{cfg: cfg, proc: cfg.ProcBase + i, locker: lockers[i], rec: rec, clk: clk, keys: keys, prog: prog,
				rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i)))}
			results[i] = c.run(runCtx, opCtx)
		}(i)
	}
	wg.Wait()
	total := MutexStats{Acquire: NewHistogram(), Release: NewHistogram(), Elapsed: time.Since(start)}
	for _, r := range results {
		total.Acquire.Merge(r.Acquire)
		total.Release.Merge(r.Release)
		total.Acquired += r.Acquired
		total.NotAcquired += r.NotAcquired
		total.Indeterminate += r.Indeterminate
		total.Errors += r.Errors
		total.ReleaseNotHeld += r.ReleaseNotHeld
		if total.FirstError == "" {
			total.FirstError = r.FirstError
		}
	}
	return total, nil
}

type client struct {
	cfg    MutexConfig
	proc   int
	locker impls.Locker
	rec    Recorder
	clk    Clock
	keys   []string
	rng    *rand.Rand
	prog   *Progress
}

func (c *client) record(typ history.Type, f, key string, lease impls.Lease, err error) {
	ev := history.Event{Proc: c.proc, Type: typ, F: f, Key: key, T: c.clk.Nanos()}
	if lease != nil {
		if tok, ok := lease.Token(); ok {
			ev.Token = &tok
		}
		if vu := lease.ValidUntil(); !vu.IsZero() {
			ev.ValidUntil = vu.UnixNano()
		}
	}
	if err != nil {
		ev.Error = err.Error()
	}
	c.rec.Record(ev)
}

// outcome maps an error to the history type that says what we know.
func outcome(err error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, impls.ErrIndeterminate):
		return history.Info
	default:
		return history.Fail
	}
}

func (c *client) run(ctx, opCtx context.Context) MutexStats {
	st := MutexStats{Acquire: NewHistogram(), Release: NewHistogram()}
	fail := func(err error) {
		st.Errors++
		if st.FirstError == "" {
			st.FirstError = err.Error()
		}
	}
	for ctx.Err() == nil {
		key := c.keys[c.rng.IntN(len(c.keys))]
		hold := c.cfg.Hold.Sample(c.rng)
		actx, cancel := context.WithTimeout(opCtx, c.cfg.AcquireTimeout)
		c.record(history.Invoke, history.Acquire, key, nil, nil)
		t0 := time.Now()
		lease, err := c.locker.Acquire(actx, key, impls.AcquireOptions{TTL: c.cfg.TTL})
		took := time.Since(t0)
		cancel()
		c.record(outcome(err), history.Acquire, key, lease, err)
		switch {
		case err == nil:
			st.Acquired++
			c.prog.Acquired.Add(1)
			_ = st.Acquire.RecordValue(clampNs(took))
		case errors.Is(err, impls.ErrIndeterminate):
			// Jepsen's rule: a process with an indeterminate outcome issues
			// nothing further; it may hold the lock at any later time.
			if opCtx.Err() == nil {
				st.Indeterminate++ // not merely cut off by the end of the run
			}
			return st
		case errors.Is(err, impls.ErrNotAcquired):
			if ctx.Err() == nil {
				st.NotAcquired++ // timed out while the run went on
			}
			continue
		default:
			fail(err)
			if sleepCtx(ctx, 10*time.Millisecond) != nil {
				return st
			}
			continue
		}
		if hold > 0 {
			// The hold runs to its end even if the run is over: a holder
			// does not cut its critical section short.
			time.Sleep(hold)
		}
		// Release with its own deadline: at the end of a run (or on
		// Ctrl-C) held locks are still given back.
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.record(history.Invoke, history.Release, key, nil, nil)
		t0 = time.Now()
		err = lease.Release(rctx)
		took = time.Since(t0)
		rcancel()
		c.record(outcome(err), history.Release, key, nil, err)
		switch {
		case err == nil:
			_ = st.Release.RecordValue(clampNs(took))
		case errors.Is(err, impls.ErrNotHeld):
			st.ReleaseNotHeld++
		case errors.Is(err, impls.ErrIndeterminate):
			st.Indeterminate++
			return st
		default:
			fail(err)
		}
	}
	return st
}

func clampNs(d time.Duration) int64 {
	switch {
	case d < histMin:
		return histMin
	case int64(d) > histMax:
		return histMax
	}
	return int64(d)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

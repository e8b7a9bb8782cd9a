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

	"github.com/locklab/locklab/clock"
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
	// Work is what a holder does inside the critical section: "mutex"
	// (hold only), "counter" (read a balance from Store, hold, write back 3%
	// less) or "tasks" (claim a task: skip it if done, else process it).
	Work  string
	Store *Store // the protected resource, for counter and tasks
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
	if err := CheckWorkload(c.Work); err != nil {
		return err
	}
	if (c.Work == "counter" || c.Work == "tasks") && c.Store == nil {
		return fmt.Errorf("workload %q needs a store", c.Work)
	}
	return nil
}

// CheckWorkload reports whether RunMutex knows the critical section name
// ("" is mutex).
func CheckWorkload(name string) error {
	switch name {
	case "", "mutex", "counter", "tasks":
		return nil
	}
	return fmt.Errorf("unknown workload %q (known: mutex, counter, tasks)", name)
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

// Client is one workload client: its lock client and its own clock (the
// one its Locker does lease arithmetic with).
type Client struct {
	Locker impls.Locker
	Clock  clock.Clock
}

// RunMutex drives clients[i] as client i until the duration ends or ctx is
// cancelled. Held leases are released before it returns.
func RunMutex(ctx context.Context, cfg MutexConfig, clients []Client, rec Recorder, clk Clock, prog *Progress) (MutexStats, error) {
	if err := cfg.Validate(); err != nil {
		return MutexStats{}, err
	}
	if len(clients) != cfg.Clients {
		return MutexStats{}, fmt.Errorf("%d lock clients for %d clients", len(clients), cfg.Clients)
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
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			own := clients[i].Clock
			if own == nil {
				own = &clock.Skewable{}
			}
			c := client{cfg: cfg, proc: cfg.ProcBase + i, locker: clients[i].Locker, own: own, rec: rec, clk: clk, keys: keys, prog: prog,
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
	own    clock.Clock // the client's clock, for its idea of lease expiry
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
			// The expiry as the holder believes it, moved onto the history's
			// monotonic scale: a client whose clock runs slow believes in a
			// later expiry, and the checker must see exactly that.
			ev.ValidUntil = ev.T + int64(vu.Sub(c.own.Now()))
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
		// The critical section runs to its end even if the run is over: a
		// holder does not cut its work short.
		c.critical(key, lease, hold)
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

// critical is the holder's work on the protected resource.
func (c *client) critical(key string, lease impls.Lease, hold time.Duration) {
	var token *uint64
	if t, ok := lease.Token(); ok {
		token = &t
	}
	switch c.cfg.Work {
	case "counter":
		// The seed's "deduct 3% of the balance": read, think, write.
		b, err := c.cfg.Store.Read(c.proc, key, token)
		sleep(hold)
		if err == nil {
			_ = c.cfg.Store.Write(c.proc, key, b-b*3/100, b, token)
		}
	case "tasks":
		if !c.cfg.Store.Done(key) {
			sleep(hold) // the processing
			_, _ = c.cfg.Store.Process(c.proc, key, token)
		}
	default:
		sleep(hold)
	}
}

func sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
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

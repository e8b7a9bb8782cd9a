package workload

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
)

// client is one process of the workload: one lock client, one process id.
type client struct {
	spec   Spec
	proc   int
	locker impls.Locker
	own    clock.Clock // the client's clock, for its idea of lease expiry
	halt   *Halt       // nil: nothing stops the client's own steps but the OS
	rec    history.Recorder
	clk    Stamper
	keys   []string
	rng    *rand.Rand
	prog   *Progress
	due    *schedule // open loop: when this client's next request is due; nil in a closed loop
	// fatal ends the run for a broken lock client; nil: nobody to tell.
	fatal func(error)
	// late is the most a careful holder's step of work has overslept
	// (up to maxLate): slack it keeps before its lease's end.
	late time.Duration
}

// maxLate caps the slack a careful holder learns from its late timers: the
// lab's stall threshold, past which a standstill is recorded as a stall
// (and a process stopped whole by a fault is not its timer's lateness).
const maxLate = 100 * time.Millisecond

// schedule is one client's share of an open loop's arrivals: a request
// is due every `every`, from next on. It outlives a retired client: its
// replacement takes the schedule over.
type schedule struct {
	next  time.Time
	every time.Duration
}

// wait returns when the next request was due, after sleeping until then
// if it is still ahead; late reports a request already overdue.
func (s *schedule) wait(ctx context.Context) (due time.Time, late bool, err error) {
	due = s.next
	s.next = s.next.Add(s.every)
	if d := time.Until(due); d > 0 {
		return due, false, sleepCtx(ctx, d)
	}
	return due, true, nil
}

// record writes one event. With a lease, it carries the fencing token and
// the holder's current belief about its expiry.
func (c *client) record(typ history.Type, f, key string, lease impls.Lease, err error) {
	token, vu := leaseFacts(lease)
	c.recordBelief(typ, f, key, token, vu, err)
}

// leaseFacts are what an event carries of lease: its fencing token and
// the holder's belief about its expiry (none without a lease).
func leaseFacts(lease impls.Lease) (token *uint64, vu time.Time) {
	if lease == nil {
		return nil, time.Time{}
	}
	if tok, ok := lease.Token(); ok {
		token = &tok
	}
	return token, lease.ValidUntil()
}

// recordBelief writes one event carrying token and the holder's belief vu
// about its lease's expiry (zero: none).
func (c *client) recordBelief(typ history.Type, f, key string, token *uint64, vu time.Time, err error) {
	c.rec.Record(c.event(typ, f, key, token, vu, err))
}

// event is one event of this client's, stamped now.
func (c *client) event(typ history.Type, f, key string, token *uint64, vu time.Time, err error) history.Event {
	ev := history.Event{Proc: c.proc, Type: typ, F: f, Key: key, T: c.clk.Nanos(), Token: token}
	if !vu.IsZero() {
		// The expiry as the holder believes it, moved onto the history's
		// monotonic scale: a client whose clock runs slow believes in a
		// later expiry, and the checker must see exactly that.
		ev.ValidUntil = ev.T + int64(vu.Sub(c.own.Now()))
	}
	if err != nil {
		ev.Error = err.Error()
	}
	return ev
}

// renewed records a renewal the approach made on its own (a watchdog) as
// the holder's extend: as it is sent, and its answer. It is called from the
// approach's goroutine, and goes on while the client's own steps are
// halted: the renewals are the lock client's, not the holder's work.
func (c *client) renewed(key string) func(impls.Renewal) {
	return func(r impls.Renewal) {
		if !r.Done {
			c.recordBelief(history.Invoke, history.Extend, key, nil, time.Time{}, nil)
			return
		}
		c.recordBelief(outcome(r.Err), history.Extend, key, nil, r.ValidUntil, r.Err)
	}
}

// outcome maps an error to the history type that says what we know.
func outcome(err error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, impls.ErrIndeterminate), errors.Is(err, impls.ErrCrashed), errors.Is(err, impls.ErrBrokenClient):
		// Nothing is known of the call's effect.
		return history.Info
	default:
		return history.Fail
	}
}

// run cycles acquire, critical section, release until ctx ends. It returns
// retired=true when an outcome was indeterminate: the process must issue
// nothing further.
func (c *client) run(ctx, opCtx context.Context, st *Stats) (retired bool) {
	for ctx.Err() == nil {
		key := c.keys[c.rng.IntN(len(c.keys))]
		hold := c.spec.Hold.Sample(c.rng)
		due, late := time.Time{}, false
		if c.due != nil {
			var err error
			if due, late, err = c.due.wait(ctx); err != nil {
				return false
			}
			if late {
				st.Late++
			}
		}
		actx, cancel := context.WithTimeout(opCtx, c.spec.AcquireTimeout)
		c.record(history.Invoke, history.Acquire, key, nil, nil)
		t0 := time.Now()
		if c.due != nil {
			t0 = due // latency from when the request was due
		}
		lease, err := c.locker.Acquire(actx, key, impls.AcquireOptions{TTL: c.spec.TTL, OnRenew: c.renewed(key)})
		took := time.Since(t0)
		cancel()
		c.record(outcome(err), history.Acquire, key, lease, err)
		switch {
		case err == nil:
			st.Acquired++
			c.prog.Acquired.Add(1)
			_ = st.Acquire.RecordValue(clampNs(took))
		case c.ended(err, st):
			return true
		case errors.Is(err, impls.ErrIndeterminate):
			// Counted like every info event in the history, so the two
			// agree; those cut off by the end of the run are told apart.
			st.Indeterminate++
			if opCtx.Err() != nil {
				st.CutAtEnd++
			}
			return true
		case errors.Is(err, impls.ErrNotAcquired):
			if ctx.Err() == nil {
				st.NotAcquired++ // timed out while the run went on
			}
			continue
		default:
			st.failed(err)
			if errors.Is(err, impls.ErrUnavailable) {
				st.Unavailable++
			}
			if sleepCtx(ctx, 10*time.Millisecond) != nil {
				return false
			}
			continue
		}
		// The critical section runs to its end even if the run is over: a
		// holder does not cut its work short (unless the run was finished
		// early, its question answered: Spec.Finish).
		var reenter func() reentry
		if c.spec.Reentry > 0 && c.rng.Float64() < c.spec.Reentry {
			reenter = func() reentry { return c.reenter(opCtx, key, st) }
		}
		stopWatch := c.watch(key, lease, st)
		retired := c.critical(key, lease, hold, reenter)
		stopWatch()
		if retired {
			return true
		}
		if c.release(key, lease, st) {
			return true
		}
		// A zero Think draws nothing: the cycles of a workload without
		// one are those it always had.
		if think := c.spec.Think.Sample(c.rng); think > 0 && sleepCtx(ctx, think) != nil {
			return false
		}
	}
	return false
}

// release gives key's lease back with a deadline of its own: at the end of
// a run (or on Ctrl-C) held locks are still given back. The invoke carries
// the holder's belief about its lease at the moment it lets go. It says
// whether the client retires (the release's outcome unknown).
func (c *client) release(key string, lease impls.Lease, st *Stats) (retired bool) {
	c.halt.wait()
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	c.record(history.Invoke, history.Release, key, lease, nil)
	t0 := time.Now()
	err := lease.Release(rctx)
	took := time.Since(t0)
	c.record(outcome(err), history.Release, key, nil, err)
	switch {
	case err == nil:
		_ = st.Release.RecordValue(clampNs(took))
	case errors.Is(err, impls.ErrNotHeld):
		st.ReleaseNotHeld++
	case c.ended(err, st):
		return true
	case errors.Is(err, impls.ErrIndeterminate):
		st.Indeterminate++
		return true
	default:
		st.failed(err)
	}
	return false
}

// failed counts an operation's unexpected error, keeping the first.
func (st *Stats) failed(err error) {
	st.Errors++
	if st.FirstError == "" {
		st.FirstError = err.Error()
	}
}

// ended reports whether err ends the client: its process was killed (it
// is replaced, as after an indeterminate outcome) or its lock client is
// broken (the run ends).
func (c *client) ended(err error, st *Stats) bool {
	switch {
	case errors.Is(err, impls.ErrCrashed):
		st.Crashed++
		return true
	case errors.Is(err, impls.ErrBrokenClient):
		if c.fatal != nil {
			c.fatal(err)
		}
		return true
	}
	return false
}

// watch runs beside a holder's critical section: it renews the lease every
// TTL/3 when the spec asks for renewal, unless the client is halted (the
// renewals are its own steps, unlike a watchdog inside its lock client),
// and records the moment the holder is told its lock is gone (the Lost
// signal, or a renewal answered not-held). It returns a function that
// stops it.
func (c *client) watch(key string, lease impls.Lease, st *Stats) (stop func()) {
	lost := lease.Lost()
	renew := c.spec.Renew && c.spec.TTL > 0
	if lost == nil && !renew {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var tick <-chan time.Time
		if renew {
			t := time.NewTicker(c.spec.TTL / 3)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-done:
				return
			case <-lost:
				c.record(history.Info, history.Lost, key, lease, nil)
				st.Lost++
				return
			case <-tick:
				if c.halt.halted() {
					// The renewals are the holder's own steps: a halted
					// holder (paused, hung) sends none.
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), c.spec.TTL/3)
				c.record(history.Invoke, history.Extend, key, nil, nil)
				err := lease.Extend(ctx, c.spec.TTL)
				cancel()
				if errors.Is(err, impls.ErrUnsupported) {
					// Record it as never having happened and stop asking.
					c.record(history.Fail, history.Extend, key, nil, err)
					tick = nil
					continue
				}
				c.record(outcome(err), history.Extend, key, lease, err)
				switch {
				case err == nil:
					st.Renewals++
				case errors.Is(err, impls.ErrBrokenClient), errors.Is(err, impls.ErrCrashed):
					// The release that follows tells the loop.
					return
				case errors.Is(err, impls.ErrNotHeld):
					st.Lost++
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// reentry is how a re-entry went for the holder.
type reentry int

const (
	reentered reentry = iota // granted and given back: the work goes on
	refused                  // not granted: the holder's lock is not what it thought, and it gives its work up
	retire                   // an outcome it cannot know, or its process killed: it does nothing more
)

// critical is the holder's work on the protected resource; reenter, when
// set, is a re-entry made halfway through the work (between a counter's
// read and its write). A re-entry refused ends the work there, its write
// not made, as an error inside a critical section does. It reports
// whether the client retired: it then does nothing more, its release
// included.
func (c *client) critical(key string, lease impls.Lease, hold time.Duration, reenter func() reentry) (retired bool) {
	var token *uint64
	if t, ok := lease.Token(); ok {
		token = &t
	}
	work := func() reentry {
		if reenter == nil {
			c.work(lease, hold)
			return reentered
		}
		c.work(lease, hold/2)
		if r := reenter(); r != reentered {
			return r
		}
		c.work(lease, hold-hold/2)
		return reentered
	}
	var r reentry
	switch c.spec.Kind {
	case Counter:
		// The seed's "deduct 3% of the balance": read, think, write.
		b, err := c.spec.Store.Read(c.proc, key, token)
		if r = work(); r == reentered && err == nil {
			c.write(lease, func() { _ = c.spec.Store.Write(c.proc, key, b-b*3/100, b, token) })
		}
	case Tasks:
		if !c.spec.Store.Done(key) {
			if r = work(); r == reentered { // work: the processing
				c.write(lease, func() { _, _ = c.spec.Store.Process(c.proc, key, token) })
			}
		}
	default:
		r = work()
	}
	return r == retire
}

// write makes the holder's write to the protected store, unless its lease
// says it may not act or the run is finished: a step of the holder, which
// a halt that comes on while it is under way lets end (Halt.Settled).
func (c *client) write(lease impls.Lease, w func()) {
	done := c.halt.step()
	defer done()
	if c.mayAct(lease) && !c.finished() {
		w()
	}
}

// reenter acquires key again while holding it, and gives that hold back:
// a re-entry, recorded as one (history.Event.Reentry). A re-entry refused
// is counted as any failure.
func (c *client) reenter(opCtx context.Context, key string, st *Stats) reentry {
	actx, cancel := context.WithTimeout(opCtx, c.spec.AcquireTimeout)
	c.recordReentry(history.Invoke, key, nil, nil)
	inner, err := c.locker.Acquire(actx, key, impls.AcquireOptions{TTL: c.spec.TTL, OnRenew: c.renewed(key)})
	cancel()
	c.recordReentry(outcome(err), key, inner, err)
	switch {
	case err == nil:
		st.Reentries++
	case c.retires(err, key, st):
		return retire
	default:
		st.failed(err)
		return refused
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	c.record(history.Invoke, history.Release, key, inner, nil)
	err = inner.Release(rctx)
	c.record(outcome(err), history.Release, key, nil, err)
	switch {
	case err == nil:
	case errors.Is(err, impls.ErrNotHeld):
		st.ReleaseNotHeld++
	case c.retires(err, key, st):
		return retire
	default:
		st.failed(err)
	}
	return reentered
}

// retires reports whether a re-entry's outcome err ends the client inside
// its hold: its process killed, its lock client broken, or an outcome it
// cannot know (which it records: dropped).
func (c *client) retires(err error, key string, st *Stats) bool {
	switch {
	case c.ended(err, st):
		return true
	case errors.Is(err, impls.ErrIndeterminate):
		st.Indeterminate++
		c.dropped(key)
		return true
	}
	return false
}

// dropped records that the client retires while it holds key (a
// re-entry's outcome unknown): it does nothing more, and its connections
// are dropped as a crash drops them, the key left to the server. The
// history says so as it says of a crash, which ends the holder's tenure
// under the lease model.
func (c *client) dropped(key string) {
	c.rec.Record(history.Event{Proc: c.proc, Type: history.Info, F: history.Crash, T: c.clk.Nanos(),
		Error: "retired holding " + key + " after a re-entry's outcome was unknown; its connections dropped"})
}

// recordReentry records an event of a re-entry's acquire.
func (c *client) recordReentry(typ history.Type, key string, lease impls.Lease, err error) {
	token, vu := leaseFacts(lease)
	ev := c.event(typ, history.Acquire, key, token, vu, err)
	ev.Reentry = true
	c.rec.Record(ev)
}

// workStep is the unit of a careful holder's work: it looks at its clock
// before each, and starts none that its lease would not cover.
const workStep = 10 * time.Millisecond

// work spends hold in the critical section. A holder that honours its
// lease stops early, before its lease runs out by its own clock: what it
// believes, right or wrong, not what the server decided.
func (c *client) work(lease impls.Lease, hold time.Duration) {
	// A halted holder's work ends when it is let go: the step after it
	// (its write, its release) comes after the pause, as in a process
	// that was stopped whole.
	defer c.halt.wait()
	if !c.spec.HonourLease {
		c.sleep(hold)
		return
	}
	end := time.Now().Add(hold)
	for {
		c.halt.wait()
		left := time.Until(end)
		if left <= 0 || !c.mayAct(lease) || c.finished() {
			return
		}
		step, slept := min(left, workStep), time.Now()
		c.sleep(step)
		c.late = min(max(c.late, time.Since(slept)-step), maxLate)
	}
}

// sleep waits d, or less if the run is finished early (Spec.Finish): a
// case that answered its question does not wait for the holds under way,
// which last seconds in some (the work is given up, its write not made).
// A run that reached its duration lets every hold run to its end.
func (c *client) sleep(d time.Duration) {
	if c.spec.Finish == nil || d <= 0 {
		sleep(d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.spec.Finish:
	}
}

// finished reports whether the run was finished early (Spec.Finish).
func (c *client) finished() bool {
	if c.spec.Finish == nil {
		return false
	}
	select {
	case <-c.spec.Finish:
		return true
	default:
		return false
	}
}

// mayAct reports whether the holder may still act under lease: always,
// unless it honours its lease and less than two steps of work are left of
// the lease by its own clock (one to finish the step, one of slack for a
// late timer), and as much again as its timers have been late (on a loaded
// machine a step woke tens of milliseconds late and the release went out
// after the next holder's grant). A lease without an expiry (a session, a
// transaction) never runs out here.
func (c *client) mayAct(lease impls.Lease) bool {
	if !c.spec.HonourLease {
		return true
	}
	vu := lease.ValidUntil()
	return vu.IsZero() || c.own.Now().Add(2*workStep+c.late).Before(vu)
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

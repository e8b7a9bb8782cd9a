package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/history"
)

// Resolver turns a step's selector into targets at the moment it fires: the
// runner knows the clients, which of them holds a key, and (through
// ResolveNodes) the nodes. rng, seeded from the plan, is for its random
// choices, so a seed fixes the targets too. ErrNoTarget (wrapped) means
// nothing matches now.
type Resolver interface {
	Resolve(ctx context.Context, sel Selector, rng *rand.Rand) ([]Target, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, sel Selector, rng *rand.Rand) ([]Target, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, sel Selector, rng *rand.Rand) ([]Target, error) {
	return f(ctx, sel, rng)
}

// Waiter blocks until an event-driven step's condition holds (or ctx ends).
// The runner provides it from its live view of holders. It returns how
// long ago the condition came true by the history's clock (the grant, the
// renewal, the release asked; never before Wait was called): the lab
// learns of a client's event late, by more on a loaded machine, and a
// step's `after` and `for` count from the event itself, so that the fault
// ends at the same point of the client's work however late it was noticed.
type Waiter interface {
	Wait(ctx context.Context, w When) (late time.Duration, err error)
}

// Recorder takes nemesis events, as the history holds them: the event's
// type and its value. The engine calls it from one goroutine at a time, in
// the order the events happen.
type Recorder interface {
	Nemesis(history.Type, history.NemesisValue)
}

// Engine runs a compiled plan: it resolves, injects, records, and heals
// each injection after its `for`; HealAll heals what is left. One engine
// per run.
type Engine struct {
	resolver Resolver
	rec      Recorder
	waiter   Waiter
	// HealTimeout bounds each heal. Heals run on a context detached from
	// the run's, so a cancelled run (Ctrl-C) still heals: a server left
	// paused or a partition left in place would outlive the run.
	HealTimeout time.Duration

	recMu sync.Mutex // serializes recorder calls

	mu     sync.Mutex
	nextID int
	active []*injection // injected and not yet healed, in injection order
	closed bool         // HealAll ran: inject nothing more, heal late ones at once
	// settled are the steps one of whose injections has run its course:
	// healed after its `for`, in place until the end, instantaneous, or
	// failed (a runner ends a case early only once every step has had its
	// say).
	settled map[int]bool
	errs    []error

	opened     chan struct{} // closed once the faults due at the start are in place
	openedOnce sync.Once
}

type injection struct {
	id    int
	timed bool                 // healed after its `for`, not at the end
	stop  history.NemesisValue // the stop event, filled in but for its Error
	heal  Heal
	done  bool
}

// NewEngine returns an engine resolving targets with r and recording with
// rec. w may be nil when the plan has no event-driven steps.
func NewEngine(r Resolver, rec Recorder, w Waiter) *Engine {
	return &Engine{resolver: r, rec: rec, waiter: w, HealTimeout: time.Minute, opened: make(chan struct{})}
}

// Opened is closed once Run has put in place (or failed to) every timed
// fault due at the start (at 0): a runner starts its clients then, so a
// fault "from the start" is there before the first request.
func (e *Engine) Opened() <-chan struct{} { return e.opened }

func (e *Engine) open() { e.openedOnce.Do(func() { close(e.opened) }) }

// Run runs plan against a run that started at start, and returns when every
// planned injection has fired and its timed heal is done, or when ctx ends
// (then injections still in place are left for HealAll). It returns the
// failures that point at the lab rather than at the moment (an injection or
// heal that failed, a fault not available on its target); "no target now"
// and the end of ctx are not errors.
func (e *Engine) Run(ctx context.Context, start time.Time, plan []Planned) error {
	defer e.open()
	for _, p := range plan {
		if p.When != nil && e.waiter == nil {
			return fmt.Errorf("step %d waits for %s, but the engine has no Waiter", p.Step+1, p.When)
		}
	}
	var wg sync.WaitGroup
	// Triggers wait from the start; timed injections are started by one
	// loop as their times come, so a long plan is not a goroutine each.
	// Those due at the start (opensRun) open the run once in place.
	var opening sync.WaitGroup
	for _, p := range plan {
		switch {
		case p.When != nil:
			wg.Add(1)
			go func() { defer wg.Done(); e.fire(ctx, start, p, func() {}) }()
		case opensRun(p):
			wg.Add(1)
			opening.Add(1)
			go func() { defer wg.Done(); e.fire(ctx, start, p, sync.OnceFunc(opening.Done)) }()
		}
	}
	go func() { opening.Wait(); e.open() }()
	for _, p := range plan {
		if p.When != nil || opensRun(p) {
			continue
		}
		if !sleepUntil(ctx, start.Add(p.At)) {
			break
		}
		wg.Add(1)
		go func() { defer wg.Done(); e.fire(ctx, start, p, func() {}) }()
	}
	wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}

// opensRun says whether the run's clients wait for p: a timed fault due
// at the start, unless it is on the lock's holder, which needs the clients
// going (so is a waiter for it).
func opensRun(p Planned) bool {
	return p.When == nil && p.At <= 0 && p.Target.Client != ClientHolder && p.Target.Client != ClientWaiter
}

// fire runs one planned injection through its life; injected is called
// once the injection is in place or failed (and at the latest on return).
func (e *Engine) fire(ctx context.Context, start time.Time, p Planned, injected func()) {
	defer injected()
	var healAt time.Time // a when step's: its condition's moment plus after and for
	if p.When != nil {
		if !sleepUntil(ctx, start.Add(p.At)) {
			return
		}
		late, err := e.waiter.Wait(ctx, *p.When)
		if err != nil {
			if ctx.Err() == nil {
				e.fail(fmt.Errorf("step %d: wait for %s: %w", p.Step+1, p.When, err))
			}
			return
		}
		came := time.Now().Add(-max(late, 0)).Add(time.Duration(p.When.After))
		healAt = came.Add(p.For)
		if !sleepUntil(ctx, came) {
			return
		}
	}
	// Resolve before the invoke: finding the holder of a key may wait, and
	// the invoke should mark when the fault is being applied, to what.
	resolving := time.Now()
	targets, err := e.resolve(ctx, p)
	if !healAt.IsZero() {
		// A target the step waited for (the key's next holder) takes the
		// fault for its whole length from when it was found.
		healAt = healAt.Add(time.Since(resolving))
	}
	e.mu.Lock()
	if e.closed || ctx.Err() != nil {
		e.mu.Unlock()
		return
	}
	e.nextID++
	id := e.nextID
	e.mu.Unlock()
	ev := history.NemesisValue{ID: int64(id), Op: history.NemesisStart, Fault: p.Fault.Kind(), Threat: p.Fault.Threat(),
		Selector: p.Target.String(), Target: targetNames(targets), Params: Params(p.Fault)}
	if p.For > 0 {
		ev.For = p.For.String()
	}
	if p.When != nil {
		ev.When = p.When.String()
	}
	e.record(history.Invoke, ev)
	var heal Heal
	if err == nil {
		heal, err = InjectAll(ctx, p.Fault, targets)
	}
	injected()
	if err != nil {
		defer e.settle(p.Step)
		ev.Error = err.Error()
		e.record(history.Fail, ev)
		// An injection cut short by the case's end is no failure; one that
		// failed on its own is, though the case ended meanwhile (a user's
		// fault command asked again until past the end).
		if !errors.Is(err, ErrNoTarget) && (ctx.Err() == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)) {
			e.fail(fmt.Errorf("%s on %s: %w", p.Fault.Kind(), p.Target, err))
		}
		return
	}
	e.record(history.OK, ev)
	stop := ev
	stop.Op = history.NemesisStop
	inj := &injection{id: id, stop: stop, heal: heal, timed: p.For > 0}
	if inj.heal == nil { // instantaneous: nothing to undo
		inj.stop.Instant = true
		e.record(history.OK, inj.stop)
		e.settle(p.Step)
		return
	}
	e.mu.Lock()
	late := e.closed
	e.active = append(e.active, inj)
	e.mu.Unlock()
	if late {
		_ = e.healOne(ctx, inj)
		return
	}
	if p.For <= 0 {
		e.settle(p.Step)
		return // healed by HealAll
	}
	lasts := p.For
	if !healAt.IsZero() {
		lasts = max(time.Until(healAt), 0)
	}
	select {
	case <-time.After(lasts):
		_ = e.healOne(ctx, inj)
		e.settle(p.Step)
	case <-ctx.Done():
	}
}

func (e *Engine) settle(step int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.settled == nil {
		e.settled = map[int]bool{}
	}
	e.settled[step] = true
}

// Settled is how many of the plan's steps have run their course once: an
// injection of each healed after its `for`, in place until the end,
// instantaneous (a kill, a crash), or failed.
func (e *Engine) Settled() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.settled)
}

// InForce reports whether a fault with a `for` is in place: one that will
// heal on its own, whose aftermath a case still has to see.
func (e *Engine) InForce() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range e.active {
		if a.timed {
			return true
		}
	}
	return false
}

// resolve finds the targets and checks the fault can act on each.
func (e *Engine) resolve(ctx context.Context, p Planned) ([]Target, error) {
	rng := rand.New(rand.NewPCG(p.Seed, 0))
	targets, err := e.resolver.Resolve(ctx, p.Target, rng)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", p.Target, err)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("resolve %s: %w", p.Target, ErrNoTarget)
	}
	for _, t := range targets {
		if err := p.Fault.Available(t); err != nil {
			return targets, err
		}
	}
	return targets, nil
}

func targetNames(targets []Target) string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// healOne heals inj unless someone already did, and records the stop.
func (e *Engine) healOne(ctx context.Context, inj *injection) error {
	e.mu.Lock()
	if inj.done {
		e.mu.Unlock()
		return nil
	}
	inj.done = true
	for i, a := range e.active {
		if a == inj {
			e.active = append(e.active[:i], e.active[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.HealTimeout)
	defer cancel()
	err := inj.heal(hctx)
	stop, typ := inj.stop, history.OK
	if err != nil {
		typ, stop.Error = history.Info, err.Error()
		err = fmt.Errorf("heal %s on %s: %w", stop.Fault, stop.Target, err)
		e.fail(err)
	}
	e.record(typ, stop)
	return err
}

// HealAll heals every injection still in place, newest first, and makes the
// engine inject nothing more (an injection completing later is healed at
// once). It heals also when ctx has ended: each heal gets HealTimeout on a
// context detached from ctx. Call it after Run returns, also on Ctrl-C.
func (e *Engine) HealAll(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	left := append([]*injection(nil), e.active...)
	e.mu.Unlock()
	var errs []error
	for i := len(left) - 1; i >= 0; i-- {
		errs = append(errs, e.healOne(ctx, left[i]))
	}
	return errors.Join(errs...)
}

// Active returns the IDs of injections in place, oldest first.
func (e *Engine) Active() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int, len(e.active))
	for i, a := range e.active {
		ids[i] = a.id
	}
	return ids
}

func (e *Engine) record(typ history.Type, v history.NemesisValue) {
	e.recMu.Lock()
	defer e.recMu.Unlock()
	e.rec.Nemesis(typ, v)
}

func (e *Engine) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

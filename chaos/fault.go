// Package chaos injects faults into a running lab: server nodes, the proxies
// in front of them, one client's own links, client processes and client
// clocks. Each fault is one file and one line in registry.go; a schedule
// (schedule.go) compiles to a deterministic plan that the engine (engine.go)
// runs against targets the runner resolves, recording every injection and
// heal as a nemesis event.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/tcpproxy"
)

// Fault is one kind of failure with its parameters, decoded from a scenario
// into the fault's own struct (its yaml tags are its options).
type Fault interface {
	// Kind is the name scenario files use, e.g. "client-pause".
	Kind() string
	// Threat says, in lock terms, what the fault does to a lock holder
	// (one of the Threat* labels), so expectations can be derived from an
	// approach's promises.
	Threat() string
	// Validate checks the parameters before anything starts.
	Validate() error
	// Available reports why the fault cannot act on t, or nil: an external
	// server cannot be paused, a goroutine client cannot be SIGSTOPped.
	// Runners check it for every (fault, target) before a run; the engine
	// checks it again at injection time.
	Available(t Target) error
	// Inject starts the fault on t and returns what undoes exactly this
	// injection (its own toxics, its own clock delta), so injections
	// of one kind can overlap. A nil heal means the fault is instantaneous
	// (a crash): there is nothing to undo. On error nothing is left
	// injected: a fault acting on several links rolls back those done.
	Inject(ctx context.Context, t Target) (Heal, error)
}

// Needs is what a fault needs of the lab besides a target it can act on,
// declared by the fault (Needer), so runners and the scenario loader set
// the lab up for it without matching fault names.
type Needs struct {
	// ClientProcess: it stops or kills a whole client, heartbeats,
	// keep-alives and renewals with it, which only a client in a process
	// of its own allows.
	ClientProcess bool
	// ServerClock: it moves servers' wall clocks, which only servers run
	// under libfaketime from their start allow.
	ServerClock bool
	// ClientClock: it moves a client's clock, which a client that is a
	// process of its own (an adapter) reads only when started under
	// libfaketime.
	ClientClock bool
	// Links: it acts on network links, which only clients that connect
	// through the proxies allow (a bench connects straight to the servers
	// otherwise: a proxy costs about a round trip's time).
	Links bool
}

// Needer is a fault that needs more of the lab than its target (optional).
type Needer interface {
	Needs() Needs
}

// NeedsOf is what f needs of the lab.
func NeedsOf(f Fault) Needs {
	if n, ok := f.(Needer); ok {
		return n.Needs()
	}
	return Needs{}
}

// Heal undoes one injection. It should be called once; the engine and
// InjectAll see to that.
type Heal func(context.Context) error

// Threat labels: what a fault does to a lock holder. They are plain strings
// so expectation tables (impls, verdict) can use them without importing chaos.
const (
	ThreatHolderPause   = "holder-pause"   // the holder stops, heartbeats and renewals with it
	ThreatHolderHang    = "holder-hang"    // the holder's work stops; its process and threads go on
	ThreatHolderCrash   = "holder-crash"   // the holder is gone without releasing
	ThreatClockJump     = "clock-jump"     // the holder's lease arithmetic uses a wrong clock
	ThreatLostReply     = "lost-reply"     // a request took effect but its reply never came
	ThreatSlowReply     = "slow-reply"     // replies arrive late; the server moved on meanwhile
	ThreatHolderCutOff  = "holder-cut-off" // nothing gets through either way
	ThreatServerPause   = "server-pause"   // a server stops answering, keeps its sockets
	ThreatServerCrash   = "server-crash"   // a server dies (and comes back at heal)
	ThreatServerRestart = "server-restart" // a server dies and restarts, maybe losing state
)

// TargetKind says what a Target is.
type TargetKind int

const (
	// TargetNode is one server node: its process (nil when locklab does not
	// run it) and its shared proxy, which every client goes through.
	TargetNode TargetKind = iota + 1
	// TargetLink is one client's own proxies to some nodes: a fault on it
	// hits that client only (Kleppmann's "client 1 cannot reach D and E").
	TargetLink
	// TargetClient is one client: its worker process (nil for a goroutine
	// client) and its lease clock. There is no separate clock target:
	// client-clock acts on a client target's Clock, so it works on
	// goroutine clients too.
	TargetClient
)

func (k TargetKind) String() string {
	switch k {
	case TargetNode:
		return "node"
	case TargetLink:
		return "link"
	case TargetClient:
		return "client"
	}
	return fmt.Sprintf("TargetKind(%d)", int(k))
}

// Target is one thing a fault acts on; the runner resolves a step's Selector
// to targets at the moment of injection.
type Target struct {
	Kind TargetKind
	// Name identifies the target in events: "redis-2", "client 7",
	// "client 7 -> redis-3, redis-4".
	Name string
	// Process is a server node or a client worker process; nil when it
	// cannot be signalled (a goroutine client, an external server).
	Process Process
	// Links are the proxies a network fault acts on: a node's shared proxy,
	// or one client's own proxies to the chosen nodes.
	Links []*tcpproxy.Proxy
	// Clock is a client's lease clock (clock.Skewable satisfies it).
	Clock Clock
}

// Process is what chaos needs of a process: cluster.Node and the runner's
// worker processes satisfy it without importing chaos. A worker that cannot
// do something returns an error from that method.
type Process interface {
	Pause() error // SIGSTOP: it keeps its sockets but does nothing
	Resume() error
	Kill() error // SIGKILL, as a crash
}

// Restarter is a Process that can be started again (a server node: same
// port, same data dir), waiting until it is healthy. server-kill and
// server-restart need it; a crashed client is replaced by the runner instead.
type Restarter interface {
	Restart(ctx context.Context) error
}

// Clock is a client's lease clock.
type Clock interface {
	// Shift moves the clock by d from where it stands, in one step.
	Shift(d time.Duration)
}

// ErrUnavailable wraps every Available refusal.
var ErrUnavailable = errors.New("fault cannot act on this target")

func unavailable(f Fault, t Target, why string) error {
	return fmt.Errorf("%s on %s %q: %s: %w", f.Kind(), t.Kind, t.Name, why, ErrUnavailable)
}

// needLinks: network faults act on proxies, a node's or a client's own.
func needLinks(f Fault, t Target) error {
	if len(t.Links) == 0 {
		return unavailable(f, t, "no proxy to act on")
	}
	return nil
}

// needNodeProcess: server faults act on a node locklab runs, or one the
// user gave fault commands for.
func needNodeProcess(f Fault, t Target) error {
	if t.Kind != TargetNode {
		return unavailable(f, t, "acts on server nodes")
	}
	if t.Process == nil {
		return unavailable(f, t, "locklab does not run this server (external), and the cluster config gives it no fault-commands")
	}
	return nil
}

// A node's process may offer only some of what its type has: a server
// locklab does not run is paused, killed and started by the user's fault
// commands, where given. Such a node says so; a Process without these
// methods can do everything its type has.
type (
	pauseChecker   interface{ CanPause() error }
	restartChecker interface{ CanRestart() error }
)

// needNodePause: server-pause stops and resumes the node.
func needNodePause(f Fault, t Target) error {
	if err := needNodeProcess(f, t); err != nil {
		return err
	}
	if c, ok := t.Process.(pauseChecker); ok {
		if err := c.CanPause(); err != nil {
			return unavailable(f, t, err.Error())
		}
	}
	return nil
}

// needNodeRestart: server-kill and server-restart kill the node and
// start it again.
func needNodeRestart(f Fault, t Target) error {
	if err := needNodeProcess(f, t); err != nil {
		return err
	}
	if _, ok := t.Process.(Restarter); !ok {
		return unavailable(f, t, "cannot be restarted")
	}
	if c, ok := t.Process.(restartChecker); ok {
		if err := c.CanRestart(); err != nil {
			return unavailable(f, t, err.Error())
		}
	}
	return nil
}

// needClientProcess: client faults signal a worker process.
func needClientProcess(f Fault, t Target) error {
	if t.Kind != TargetClient {
		return unavailable(f, t, "acts on clients")
	}
	if t.Process == nil {
		return unavailable(f, t, "the client is a goroutine; run clients as processes")
	}
	return nil
}

// InjectAll injects f on every target in order. If one fails, those already
// injected are healed (in reverse) and the error returned, so nothing is
// left behind. The returned heal undoes every injection in reverse order; it
// is nil when no injection needs undoing (instantaneous faults).
func InjectAll(ctx context.Context, f Fault, targets []Target) (Heal, error) {
	var heals []Heal
	for _, t := range targets {
		h, err := f.Inject(ctx, t)
		if err != nil {
			return nil, rollback(ctx, err, heals)
		}
		if h != nil {
			heals = append(heals, h)
		}
	}
	if len(heals) == 0 {
		return nil, nil
	}
	if _, ok := f.(sideBySideHeal); ok {
		return once(func(ctx context.Context) error { return healSideBySide(ctx, heals) }), nil
	}
	return once(func(ctx context.Context) error { return healReverse(ctx, heals) }), nil
}

// sideBySideHeal is a fault whose heal waits until its server is healthy
// again, which a member of a quorum is only once enough of the others are
// back: its targets are healed side by side, not one after another (a
// whole ZooKeeper ensemble killed, healed in turn, had its first member
// wait alone for a quorum until the heal's minute ran out).
type sideBySideHeal interface {
	Fault
	healsSideBySide()
}

func healSideBySide(ctx context.Context, heals []Heal) error {
	errs := make([]error, len(heals))
	var wg sync.WaitGroup
	for i, h := range heals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func healReverse(ctx context.Context, heals []Heal) error {
	var errs []error
	for i := len(heals) - 1; i >= 0; i-- {
		errs = append(errs, heals[i](ctx))
	}
	return errors.Join(errs...)
}

// unwindTimeout bounds what a fault does after its ctx ended so as not to
// leave the servers broken: a rollback, a restarted server's start.
const unwindTimeout = time.Minute

// rollback heals what a failed injection already did and returns err with
// any rollback failure. It keeps going when ctx has ended (the injection
// may have failed for that very reason): a half-injected fault must not
// outlive the run.
func rollback(ctx context.Context, err error, heals []Heal) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unwindTimeout)
	defer cancel()
	if rerr := healReverse(ctx, heals); rerr != nil {
		return errors.Join(err, fmt.Errorf("roll back: %w", rerr))
	}
	return err
}

// once makes a heal safe to call twice, also concurrently: only the first
// call acts, so a deferred heal after an explicit one (as tests do) and the
// engine's HealAll racing a timed heal are harmless.
func once(h Heal) Heal {
	var done atomic.Bool
	return func(ctx context.Context) error {
		if !done.CompareAndSwap(false, true) {
			return nil
		}
		return h(ctx)
	}
}

// Package fleet is a case's lock clients: one per workload client, each
// in a slot that faults can aim at. A client is either a goroutine of
// locklab's own (an in-process Locker: the cheapest kind) or a `locklab
// worker` process (the same client in a process of its own, which a fault
// can pause or kill whole, heartbeats and renewals with it). Whatever the
// kind, every event is stamped on locklab's one clock and recorded into
// the case's history; the runner cannot tell the kinds apart.
//
// A third kind is an adapter process, a user's program speaking the lock
// client protocol on stdin and stdout (package adapter). Its client loop
// runs here, as for goroutines, with a Locker that speaks the protocol and
// is itself the client's process (impls.Approach.OwnProcess): the slot's
// Process pauses and kills that Locker's process, the kill is recorded as
// a crash and the client replaced under a new process id, as for workers.
// New chooses it from the approach; the runner does not change.
package fleet

import (
	"context"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/workload"
)

// Fleet is one case's clients, connected by New and waiting to start.
type Fleet interface {
	// Slots are the client positions, in order, as faults see them.
	Slots() []Slot
	// Run starts the clients and returns what they measured once the
	// workload's duration, counted from now, is over and they drained.
	// Cancelling ctx stops them early; held locks are still released.
	// It is called once: a case's clock starts there (after the faults due
	// at 0 are in place), not when the clients connected.
	Run(ctx context.Context) (workload.Stats, error)
	// Finish ends the run now as if the workload's duration had passed:
	// no client starts another cycle, operations in flight get the drain,
	// held locks are released, and Run returns. A case whose question was
	// answered ends so; calling it again, or before Run, changes nothing
	// more.
	Finish()
	// Close ends the fleet: lock clients are closed and processes still
	// paused resumed so they can exit. A crashed or retired client's lock
	// is left to the server.
	Close()
}

// Slot is one client position. Its clock and its process slot outlive
// the client in it: a replacement takes both over.
type Slot struct {
	Index int
	// Clock is the slot's lease clock, which client-clock faults move.
	Clock Clock
	// Process is the OS process running the slot's client now, for
	// faults that stop or kill a client whole; nil for goroutine clients.
	Process Process
}

// Process is the process in a slot as a fault stops and kills it: always
// the one holding the slot at the moment of the call.
type Process interface {
	Pause() error  // SIGSTOP
	Resume() error // SIGCONT
	Kill() error   // SIGKILL, returning once it is gone; the fleet records the crash
	// Hang stops the client's own steps (its work, writes, release and
	// renewals) while its process, connections and threads go on, until
	// Unhang: a deadlock or a hung call in the holder (workload.Halt).
	Hang() error
	Unhang() error
}

// Clock is a client's lease clock as a fault moves it: by a delta, in one
// step, so that faults moving it at once (two jumps due together, a
// drift's tick and a jump) all count and each heal takes back its own.
type Clock interface {
	Shift(time.Duration)
	Offset() time.Duration
}

// Config is what a fleet is made of.
type Config struct {
	Approach impls.Approach
	// Workload is what every client does: the case's, with its KeyPrefix,
	// ProcBase and Store set. Slot i records as process ProcBase+i;
	// replacements count on from ProcBase+Clients.
	Workload workload.Spec
	// Processes runs each client as a worker process (WorkerArgv) instead
	// of a goroutine, unless each client of the approach is a process of
	// its own already (an adapter).
	Processes bool
	// Endpoints gives slot i its servers' addresses (its own proxies when
	// a fault may cut one client's links); nil: none.
	Endpoints func(slot int) (impls.Endpoints, error)
	// Bind is told which slot each process id takes, before that process
	// records anything; nil: nobody needs to know.
	Bind func(proc, slot int)
	// Recorder takes every event of every client.
	Recorder history.Recorder
	// Mono stamps the events (CLOCK_MONOTONIC, the same in every process
	// of the machine); Run's duration is measured on it.
	Mono     *clock.Monotonic
	Progress *workload.Progress // live counts; nil: none
	// WorkerArgv starts one worker process; nil: this binary's "worker".
	WorkerArgv []string
	// Dir is the case's results directory: the client processes' stderr
	// goes to workers.log there.
	Dir string
	// Stall runs the stall monitor's probe in every worker process; nil:
	// none. A worker's stall is recorded as a history event, less the
	// stretches a fault paused it on purpose (a client pause is that
	// fault, not a stall of the lab).
	Stall *stall.Probe
	// ProcessClocks: a client that is a process of its own (an adapter)
	// reads a wall clock that follows its slot's clock (impls.Env).
	ProcessClocks bool
}

// New connects cfg's clients, of the kind cfg asks for, and returns once
// each has connected (or one could not: then nothing is left running).
func New(ctx context.Context, cfg Config) (Fleet, error) {
	if cfg.Processes && !cfg.Approach.OwnProcess {
		return newWorkers(ctx, cfg)
	}
	return newGoroutines(ctx, cfg)
}

func (c Config) endpoints(slot int) (impls.Endpoints, error) {
	if c.Endpoints == nil {
		return impls.Endpoints{}, nil
	}
	return c.Endpoints(slot)
}

func (c Config) bind(proc, slot int) {
	if c.Bind != nil {
		c.Bind(proc, slot)
	}
}

package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ThreatFailover: the primary of an asynchronously replicated server dies
// and a replica that never received the latest writes takes its place.
const ThreatFailover = "failover"

// Failover fails the Sentinel topology over to its replica with the latest
// writes certainly lost, as antirez's and the Redis docs' warning describes
// (FAULTS.md F8): a lock granted by the primary after the cut is gone on
// the promoted replica, so the next client is granted it while its holder's
// lease is valid.
//
// Inject, in order: hold back replication from the target (the current
// primary) to its replica, so what the primary acknowledges from now on
// cannot reach it (the outcome is certain, not a race with asynchronous
// replication); wait `after` with the primary still serving, so clients
// take the lock on it alone; kill it (mode: kill) or stop it (mode: pause);
// wait until Sentinel promotes the replica (at most `within`). The heal
// brings the old primary back (restart: empty, as without persistence; or
// resume), waits until Sentinel has made it a replica of the new primary
// and in step, and ends the hold. The topology is then whole again with
// the roles swapped: the next failover targets the new primary
// (`node: leader` follows it).
//
// Options: mode (kill, the default, or pause), replication (hold, the
// default, or keep: no cut, so what the primary acknowledged has almost
// certainly replicated, the control case), after (time between the cut and
// the kill; default 0), within (bound on the promotion and on the heal's
// wait; default 45s). Targets: the primary of the Sentinel topology:
// {node: leader, server: redis-sentinel}.
type Failover struct {
	Mode        string   `yaml:"mode"`
	Replication string   `yaml:"replication"`
	After       Duration `yaml:"after"`
	Within      Duration `yaml:"within"`
}

// FailoverNode is what the fault needs of a node (cluster.Node has it).
type FailoverNode interface {
	Process
	Restarter
	CanFailover() error
	// CutReplication holds back replication from the node to its
	// replicas (hold), or only notes it (the control case).
	CutReplication(ctx context.Context, hold bool) (ReplicationCut, error)
	// WaitReplicaOf waits until the node is a replica in step again.
	WaitReplicaOf(ctx context.Context, within time.Duration) error
}

// ReplicationCut is one held (or observed) replication: an alias of a type
// literal, so cluster declares the same type without importing chaos.
type ReplicationCut = interface {
	// Reopen lets replication through again.
	Reopen(ctx context.Context) error
	// WaitPromoted waits until one of the replicas is promoted.
	WaitPromoted(ctx context.Context, within time.Duration) error
}

// failoverSteps are the moves of one failover that differ between
// topologies (who promotes, how the old primary comes back); the sequence
// around them is one (Failover.inject).
type failoverSteps = interface {
	// Promote makes a replica the primary, or waits until it is made one.
	Promote(ctx context.Context, within time.Duration) error
	// Rejoin waits until the old primary, back, is a replica in step.
	Rejoin(ctx context.Context, within time.Duration) error
	// Reopen lets replication through again.
	Reopen(ctx context.Context) error
}

// sentinelSteps: Sentinel promotes; the old primary is made a replica by
// Sentinel too, once it sees it again.
type sentinelSteps struct {
	cut ReplicationCut
	n   FailoverNode
}

func (s sentinelSteps) Promote(ctx context.Context, within time.Duration) error {
	return s.cut.WaitPromoted(ctx, within)
}
func (s sentinelSteps) Rejoin(ctx context.Context, within time.Duration) error {
	return s.n.WaitReplicaOf(ctx, within)
}
func (s sentinelSteps) Reopen(ctx context.Context) error { return s.cut.Reopen(ctx) }

func (Failover) Kind() string   { return "failover" }
func (Failover) Threat() string { return ThreatFailover }

// Ranges: a failover takes its time: one lease to three.
func (Failover) Ranges() Ranges { return Ranges{For: Span{1, 3}} }

func (f Failover) Validate() error { return f.validate(f.Kind()) }

func (f Failover) validate(kind string) error {
	switch f.Mode {
	case "", "kill", "pause":
	default:
		return fmt.Errorf("%s: mode %q: want kill or pause", kind, f.Mode)
	}
	switch f.Replication {
	case "", "hold", "keep":
	default:
		return fmt.Errorf("%s: replication %q: want hold or keep", kind, f.Replication)
	}
	if f.After < 0 || f.Within < 0 {
		return fmt.Errorf("%s: after and within must not be negative", kind)
	}
	return nil
}

func (f Failover) within() time.Duration {
	if f.Within > 0 {
		return f.Within.D()
	}
	// Sentinel retries an election whose votes split two failover
	// timeouts (2 x 10 s) after the first attempt; 45 s covers one retry.
	return 45 * time.Second
}

func (f Failover) Available(t Target) error {
	_, err := f.node(t)
	return err
}

// node is t's node as the fault needs it, or why it cannot act on it.
func (f Failover) node(t Target) (FailoverNode, error) {
	if err := needNodeProcess(f, t); err != nil {
		return nil, err
	}
	n, ok := t.Process.(FailoverNode)
	if !ok {
		return nil, unavailable(f, t, "not a node of the Sentinel topology")
	}
	if err := n.CanFailover(); err != nil {
		return nil, unavailable(f, t, err.Error())
	}
	return n, nil
}

func (f Failover) Inject(ctx context.Context, t Target) (Heal, error) {
	n, err := f.node(t)
	if err != nil {
		return nil, err
	}
	return f.inject(ctx, f.Kind(), t, n, func(ctx context.Context, hold bool) (failoverSteps, error) {
		cut, err := n.CutReplication(ctx, hold)
		if err != nil {
			return nil, err
		}
		return sentinelSteps{cut: cut, n: n}, nil
	})
}

// failoverProcess is what a failover does to the primary's process.
type failoverProcess interface {
	Process
	Restarter
}

// inject is one failover, whichever topology: cut (hold or observe)
// replication from the primary n, wait `after`, stop n, promote. The heal
// brings n back, waits until it is a replica in step, and reopens
// replication.
func (f Failover) inject(ctx context.Context, kind string, t Target, n failoverProcess,
	cut func(ctx context.Context, hold bool) (failoverSteps, error)) (Heal, error) {
	steps, err := cut(ctx, f.Replication != "keep")
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, t.Name, err)
	}
	// undo is the heal, also used to roll back a failed injection.
	var stopped bool
	undo := func(ctx context.Context) error {
		var errs []error
		if stopped {
			if f.Mode == "pause" {
				errs = append(errs, n.Resume())
			} else {
				errs = append(errs, n.Restart(ctx))
			}
			if errs[0] == nil {
				// Until the old primary is a replica, two nodes may say
				// they lead: not yet whole.
				errs = append(errs, steps.Rejoin(ctx, f.within()))
			}
		}
		errs = append(errs, steps.Reopen(ctx))
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("heal %s %s: %w", kind, t.Name, err)
		}
		return nil
	}
	if f.After > 0 {
		select {
		case <-ctx.Done():
			return nil, rollback(ctx, ctx.Err(), []Heal{undo})
		case <-time.After(f.After.D()):
		}
	}
	if f.Mode == "pause" {
		err = n.Pause()
	} else {
		err = n.Kill()
	}
	if err != nil {
		return nil, rollback(ctx, fmt.Errorf("%s %s: %w", kind, t.Name, err), []Heal{undo})
	}
	stopped = true
	if err := steps.Promote(ctx, f.within()); err != nil {
		return nil, rollback(ctx, fmt.Errorf("%s %s: %w", kind, t.Name, err), []Heal{undo})
	}
	return once(undo), nil
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/impls"
)

// PlannedNode is a node of a kind as it will be once started, known before
// anything starts: it answers what such a node could take (be cut off its
// network, have its clock moved, fail over) by the same rules as a started
// Node, and does nothing. Runners check a plan's faults against it, so a
// fault a server cannot take is refused before the run, not when it fires.
type PlannedNode struct {
	kind   Kind
	docker bool
	// external: the user's servers (ExternalConfig.Planned); commands
	// are the fault commands of each node a fault may pick (nil: none).
	external bool
	commands []*nodeCommands
}

// Planned is a node of kind s as StartLocal (docker false) or StartDocker
// would start it.
func Planned(s impls.Server, docker bool) (PlannedNode, error) {
	k, err := KindOf(s)
	if err != nil {
		return PlannedNode{}, err
	}
	return PlannedNode{kind: k, docker: docker}, nil
}

// errPlanned: a planned node has not started; only its Can* methods answer.
var errPlanned = errors.New("not started yet")

func (p PlannedNode) String() string { return "a " + string(p.kind.Server) + " node" }

func (PlannedNode) Pause() error                  { return errPlanned }
func (PlannedNode) Resume() error                 { return errPlanned }
func (PlannedNode) Kill() error                   { return errPlanned }
func (PlannedNode) Restart(context.Context) error { return errPlanned }
func (PlannedNode) Isolate() error                { return errPlanned }
func (PlannedNode) Rejoin(context.Context) error  { return errPlanned }

// eachCommands answers for the user's servers: every node a fault may pick
// must have the commands for ops.
func (p PlannedNode) eachCommands(ops ...string) error {
	for _, c := range p.commands {
		if err := c.can(ops...); err != nil {
			return err
		}
	}
	return nil
}

// CanPause: as Node.CanPause.
func (p PlannedNode) CanPause() error {
	if p.external {
		return p.eachCommands(OpPause, OpResume)
	}
	return nil
}

// CanRestart: as Node.CanRestart.
func (p PlannedNode) CanRestart() error {
	if p.external {
		return p.eachCommands(OpKill, OpStart)
	}
	return nil
}

// CanIsolate: as Node.CanIsolate.
func (p PlannedNode) CanIsolate() error {
	if p.external {
		return p.eachCommands(OpIsolate, OpRejoin)
	}
	return canIsolate(p.docker, p.docker && p.kind.hostNetwork)
}

// CanSetClock: a kind that can run under libfaketime can have its clock
// moved (a plan with a server clock fault starts its servers so); the
// user's servers, by their clock fault command.
func (p PlannedNode) CanSetClock() error {
	if p.external {
		if err := p.eachCommands(OpClock); err != nil {
			return fmt.Errorf("%w: %w", err, ErrNoFakeTime)
		}
		return nil
	}
	if p.kind.NoFakeTime != "" {
		return fmt.Errorf("%s: %w", p.kind.NoFakeTime, ErrNoFakeTime)
	}
	return nil
}

func (PlannedNode) ShiftClock(time.Duration) error { return errPlanned }

// CanFailover: only a kind that fails over, run by locklab.
func (p PlannedNode) CanFailover() error {
	if !p.kind.FailsOver || p.external {
		var can []string
		for _, k := range Kinds() {
			if k.FailsOver {
				can = append(can, string(k.Server))
			}
		}
		return fmt.Errorf("a %s node cannot be failed over (only %s, run by locklab)", p.kind.Server, strings.Join(can, ", "))
	}
	return nil
}

func (PlannedNode) CutReplication(context.Context, bool) (ReplicationCut, error) {
	return nil, errPlanned
}
func (PlannedNode) WaitReplicaOf(context.Context, time.Duration) error { return errPlanned }

// PlannedEndpoints are what clients are given for a cluster of kind s
// whose nodes, in node order, are reached at addrs, before anything
// starts: the kind's own rule, so what reads endpoints (an adapter's
// hello) is checked against every kind without starting servers.
func PlannedEndpoints(s impls.Server, addrs []string) (impls.Endpoints, error) {
	k, err := KindOf(s)
	if err != nil {
		return impls.Endpoints{}, err
	}
	c := &Cluster{}
	for i, a := range addrs {
		c.nodes = append(c.nodes, &Node{Name: k.nodeName(i), Server: s, direct: a})
	}
	return c.DirectEndpoints(), nil
}

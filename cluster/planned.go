package cluster

import (
	"context"
	"errors"
	"fmt"
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

// CanIsolate: as Node.CanIsolate.
func (p PlannedNode) CanIsolate() error { return canIsolate(p.docker, p.docker && p.kind.hostNetwork) }

// CanSetClock: a kind that can run under libfaketime can have its clock
// moved (a plan with a server clock fault starts its servers so).
func (p PlannedNode) CanSetClock() error {
	if p.kind.NoFakeTime != "" {
		return fmt.Errorf("%s: %w", p.kind.NoFakeTime, ErrNoFakeTime)
	}
	return nil
}

func (PlannedNode) SetClockOffset(time.Duration) error  { return errPlanned }
func (PlannedNode) ClockOffset() (time.Duration, error) { return 0, errPlanned }

// CanFailover: only the Sentinel topology fails over.
func (p PlannedNode) CanFailover() error {
	if p.kind.Server != impls.RedisSentinel {
		return fmt.Errorf("a %s node is not a Redis of the Sentinel topology", p.kind.Server)
	}
	return nil
}

func (PlannedNode) CutReplication(context.Context, bool) (ReplicationCut, error) {
	return nil, errPlanned
}
func (PlannedNode) WaitReplicaOf(context.Context, time.Duration) error { return errPlanned }

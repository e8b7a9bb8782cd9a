package chaos

import (
	"context"
	"fmt"
)

// ThreatServerCutOff: a server keeps running, its clocks and timeouts with
// it, but nobody reaches it: neither its peers nor its clients.
const ThreatServerCutOff = "server-cut-off"

// ServerIsolate cuts a server off the network, from its peers as from its
// clients, and joins it back at the heal: a real partition of one node,
// which the proxies cannot make (an ensemble's members talk to each other
// directly). Unlike server-pause the server keeps running: an isolated
// ZooKeeper leader notices it lost its followers and steps down, the
// others elect a new leader; an isolated Redis node's keys keep expiring.
// Clients see their connections fail at once (the published port is
// gone) rather than hang.
//
// Options: none (the step's `for` is the isolation). Targets: a node of a
// Docker cluster (--cluster docker: `docker network disconnect`), or one of
// the user's with isolate and rejoin fault commands.
type ServerIsolate struct{}

// Isolator is what the fault needs of a node (cluster.Node has it; only
// nodes in containers can be isolated).
type Isolator interface {
	CanIsolate() error
	Isolate() error
	Rejoin(ctx context.Context) error
}

func (ServerIsolate) Kind() string   { return "server-isolate" }
func (ServerIsolate) Threat() string { return ThreatServerCutOff }

func (ServerIsolate) Ranges() Ranges { return DefaultRanges() }

func (ServerIsolate) Validate() error { return nil }

func (f ServerIsolate) Available(t Target) error {
	if err := needNodeProcess(f, t); err != nil {
		return err
	}
	i, ok := t.Process.(Isolator)
	if !ok {
		return unavailable(f, t, "the node cannot be cut off its network")
	}
	if err := i.CanIsolate(); err != nil {
		return unavailable(f, t, err.Error())
	}
	return nil
}

func (ServerIsolate) healsSideBySide() {}

func (f ServerIsolate) Inject(ctx context.Context, t Target) (Heal, error) {
	i, ok := t.Process.(Isolator)
	if !ok {
		return nil, f.Available(t)
	}
	if err := i.Isolate(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
	}
	return once(func(ctx context.Context) error {
		if err := i.Rejoin(ctx); err != nil {
			return fmt.Errorf("heal %s %s: %w", f.Kind(), t.Name, err)
		}
		return nil
	}), nil
}

// Package chaos holds faults behind one small interface: inject at a time,
// heal later. Runners write every injection and heal to the history.
package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// Fault is one kind of failure applied to part of a cluster.
type Fault interface {
	Name() string
	Inject(ctx context.Context) error
	Heal(ctx context.Context) error
}

// DropReplies makes the proxy swallow every reply from the server while the
// server still receives and applies each command: the client times out not
// knowing whether its request took effect. Healing closes the affected
// connections, as a network that recovers after a stall often does.
type DropReplies struct {
	Proxy *toxiproxy.Proxy
}

const dropRepliesToxic = "locklab-drop-replies"

func (d DropReplies) Name() string { return "drop-replies(" + d.Proxy.Name + ")" }

// Inject adds a timeout toxic with timeout 0 on the downstream stream.
func (d DropReplies) Inject(ctx context.Context) error {
	spec := fmt.Sprintf(`{"name":%q,"type":"timeout","stream":"downstream","toxicity":1,"attributes":{"timeout":0}}`, dropRepliesToxic)
	if _, err := d.Proxy.Toxics.AddToxicJson(strings.NewReader(spec)); err != nil {
		return fmt.Errorf("%s: %w", d.Name(), err)
	}
	return nil
}

// Heal removes the toxic.
func (d DropReplies) Heal(ctx context.Context) error {
	if err := d.Proxy.Toxics.RemoveToxic(ctx, dropRepliesToxic); err != nil {
		return fmt.Errorf("heal %s: %w", d.Name(), err)
	}
	return nil
}

// SlowReplies delays every reply from the server by Latency: requests still
// arrive at once, so the server's state moves on while the client waits.
type SlowReplies struct {
	Proxy   *toxiproxy.Proxy
	Latency time.Duration
}

const slowRepliesToxic = "locklab-slow-replies"

func (s SlowReplies) Name() string {
	return fmt.Sprintf("slow-replies(%s, %v)", s.Proxy.Name, s.Latency)
}

// Inject adds a latency toxic on the downstream stream.
func (s SlowReplies) Inject(ctx context.Context) error {
	spec := fmt.Sprintf(`{"name":%q,"type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":%d}}`,
		slowRepliesToxic, s.Latency.Milliseconds())
	if _, err := s.Proxy.Toxics.AddToxicJson(strings.NewReader(spec)); err != nil {
		return fmt.Errorf("%s: %w", s.Name(), err)
	}
	return nil
}

// Heal removes the toxic.
func (s SlowReplies) Heal(ctx context.Context) error {
	if err := s.Proxy.Toxics.RemoveToxic(ctx, slowRepliesToxic); err != nil {
		return fmt.Errorf("heal %s: %w", s.Name(), err)
	}
	return nil
}

// All applies several faults as one: injected in order, healed in reverse.
type All []Fault

func (a All) Name() string {
	names := make([]string, len(a))
	for i, f := range a {
		names[i] = f.Name()
	}
	return strings.Join(names, "+")
}

// Inject injects every fault; on error it heals those already injected.
func (a All) Inject(ctx context.Context) error {
	for i, f := range a {
		if err := f.Inject(ctx); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = a[j].Heal(ctx)
			}
			return err
		}
	}
	return nil
}

// Heal heals every fault, returning the first error.
func (a All) Heal(ctx context.Context) error {
	var first error
	for i := len(a) - 1; i >= 0; i-- {
		if err := a[i].Heal(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Partition cuts the link both ways: nothing the client sends arrives, and
// nothing comes back, while connections stay open. Unlike DropReplies the
// server no longer hears the client's heartbeats, so sessions and leases
// expire. Healing closes the affected connections.
type Partition struct {
	Proxy *toxiproxy.Proxy
}

const partitionToxic = "locklab-partition"

func (p Partition) Name() string { return "partition(" + p.Proxy.Name + ")" }

// Inject adds a timeout toxic with timeout 0 on both streams.
func (p Partition) Inject(ctx context.Context) error {
	for _, stream := range []string{"upstream", "downstream"} {
		spec := fmt.Sprintf(`{"name":%q,"type":"timeout","stream":%q,"toxicity":1,"attributes":{"timeout":0}}`,
			partitionToxic+"-"+stream, stream)
		if _, err := p.Proxy.Toxics.AddToxicJson(strings.NewReader(spec)); err != nil {
			return fmt.Errorf("%s: %w", p.Name(), err)
		}
	}
	return nil
}

// Heal removes both toxics.
func (p Partition) Heal(ctx context.Context) error {
	var first error
	for _, stream := range []string{"upstream", "downstream"} {
		if err := p.Proxy.Toxics.RemoveToxic(ctx, partitionToxic+"-"+stream); err != nil && first == nil {
			first = fmt.Errorf("heal %s: %w", p.Name(), err)
		}
	}
	return first
}

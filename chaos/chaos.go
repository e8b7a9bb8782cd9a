// Package chaos holds faults behind one small interface: inject at a time,
// heal later. Runners write every injection and heal to the history.
package chaos

import (
	"context"
	"fmt"
	"strings"

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

package chaos

import (
	"context"
	"fmt"

	"github.com/locklab/locklab/tcpproxy"
)

// Partition cuts the target links both ways: nothing the client sends
// reaches the server and nothing comes back. The server no longer hears the
// client's heartbeats, so ZooKeeper sessions and etcd leases expire once
// the partition outlasts them; TTL locks expire on the server while their
// holder, unaware, believes it holds them. To a lock holder this is being
// cut off.
//
// Options: mode.
//   - hold (the default) behaves as a real network stall shorter than TCP's
//     retransmission timeout: bytes are held back, not dropped, and every
//     TCP connection survives the heal; the held bytes are then delivered,
//     in order (tcpproxy.Hold). A command sent during the partition is
//     applied only after the heal. SQL session locks are not freed by the
//     heal: a holder keeps its session, as it would on a real network. A
//     side that closed its connection during the partition has its close
//     delivered after its bytes.
//   - reset drops the bytes and, at the heal, closes both sides of every
//     connection that went through the link (tcpproxy.Drop):
//     every SQL session lock on the link is freed at the heal, and clients
//     reconnect. This is what locklab did before hold existed.
//
// Targets: a node (every client loses it) or one client's links (that
// client alone: client 1 cut from D and E while client 2 still reaches
// them).
//
// One difference from a real partition remains in both modes: a new
// connection opened during the partition is accepted by the proxy, which
// dials the server at once, so the server sees a TCP connection that then
// carries nothing (a real SYN would be lost). Servers that speak first
// (MariaDB, PostgreSQL) may time the silent handshake out.
type Partition struct {
	Mode string `yaml:"mode"` // hold (default) | reset
}

func (Partition) Needs() Needs   { return Needs{Links: true} }
func (Partition) Kind() string   { return "partition" }
func (Partition) Threat() string { return ThreatHolderCutOff }

// Ranges: one in five resets connections rather than dropping packets.
func (Partition) Ranges() Ranges {
	return Ranges{Options: []Choice{{Ways: []Way{{Weight: 1, Option: "mode", Values: []string{"reset"}}, {Weight: 4}}}},
		For: Span{0.3, 2.5}}
}

func (f Partition) Validate() error {
	switch f.Mode {
	case "", "hold", "reset":
		return nil
	}
	return fmt.Errorf("partition: mode %q: want hold or reset", f.Mode)
}

func (f Partition) Available(t Target) error { return needLinks(f, t) }

func (f Partition) Inject(ctx context.Context, t Target) (Heal, error) {
	kind := tcpproxy.Hold
	if f.Mode == "reset" {
		kind = tcpproxy.Drop
	}
	return addToxics(ctx, f.Kind(), t.Links, bothWays(kind)...)
}

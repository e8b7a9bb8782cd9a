package chaos

import (
	"context"

	"github.com/locklab/locklab/tcpproxy"
)

// DropReplies swallows every reply on the target links while requests still
// reach the server: the server applies a command and the client never learns
// that it did. To the holder of a lock this is a lost reply: an acquire that
// took effect looks failed (an orphaned lock until its TTL, or for ever),
// a release that took effect looks failed too.
//
// Options: none. Targets: a node (its shared proxy: every client) or one
// client's links. Heartbeats and keep-alives still arrive, so ZooKeeper and
// etcd sessions stay alive; losing them takes a partition.
//
// The bytes are dropped (tcpproxy.Drop), so the TCP stream is broken:
// healing closes both sides of every connection that went through the
// link during the fault, and clients reconnect. A stream with a hole in it
// cannot be resumed, so that is also what a real network would end in.
// The conformance suite relies on exactly this behaviour.
type DropReplies struct{}

func (DropReplies) Needs() Needs   { return Needs{Links: true} }
func (DropReplies) Kind() string   { return "drop-replies" }
func (DropReplies) Threat() string { return ThreatLostReply }

func (DropReplies) Ranges() Ranges { return Ranges{For: Span{0.2, 1.5}} }

func (DropReplies) Validate() error { return nil }

func (f DropReplies) Available(t Target) error { return needLinks(f, t) }

func (f DropReplies) Inject(ctx context.Context, t Target) (Heal, error) {
	return addToxics(ctx, f.Kind(), t.Links, tcpproxy.Toxic{Kind: tcpproxy.Drop, Direction: tcpproxy.Downstream})
}

package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/tcpproxy"
)

// SlowReplies delays every reply on the target links by Latency (± Jitter)
// while requests still arrive at once: the server's state moves on while the
// client waits. To a lock holder this is a slow reply: a release read as
// "still mine" may act after the lock expired and passed to another client;
// an acquire's reply may arrive after much of its lease has gone.
//
// Options: latency (required, at least 1ms), jitter (0 to latency: each
// chunk of bytes waits latency ± a uniform jitter). Targets: a node or one
// client's links. Connections survive the heal: the delayed bytes are
// delivered.
type SlowReplies struct {
	Latency Duration `yaml:"latency"`
	Jitter  Duration `yaml:"jitter"`
}

func (SlowReplies) Needs() Needs   { return Needs{Links: true} }
func (SlowReplies) Kind() string   { return "slow-replies" }
func (SlowReplies) Threat() string { return ThreatSlowReply }

// Ranges: a latency of a twentieth of a lease to half of one (20 ms at
// least), for half a lease to two.
func (SlowReplies) Ranges() Ranges {
	return Ranges{Options: []Choice{{Ways: []Way{{Weight: 1, Option: "latency", Span: Span{0.05, 0.5}, Min: 20 * time.Millisecond}}}},
		For: Span{0.5, 2}}
}

func (f SlowReplies) Validate() error {
	if f.Latency.D() < time.Millisecond {
		return fmt.Errorf("slow-replies: latency %v: want at least 1ms", f.Latency)
	}
	if f.Jitter < 0 || f.Jitter > f.Latency {
		return fmt.Errorf("slow-replies: jitter %v: want 0 to latency (%v)", f.Jitter, f.Latency)
	}
	return nil
}

func (f SlowReplies) Available(t Target) error { return needLinks(f, t) }

func (f SlowReplies) Inject(ctx context.Context, t Target) (Heal, error) {
	return addToxics(ctx, f.Kind(), t.Links, tcpproxy.Toxic{Kind: tcpproxy.Slow, Direction: tcpproxy.Downstream,
		Latency: f.Latency.D(), Jitter: f.Jitter.D()})
}

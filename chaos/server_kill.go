package chaos

import (
	"context"
	"fmt"
)

// ServerKill kills a server process (SIGKILL) and starts it again at the
// heal, on the same port and data dir, waiting until it is healthy. To a
// lock holder this is a server crash: what the server had not persisted is
// gone (locklab's Redis runs without persistence, so every lock key on the
// node), and clients see connection errors until it is back.
//
// Options: none (the step's `for` is the downtime; without it the server
// stays down until the engine heals everything at the end). Targets: a node
// locklab runs, or one of the user's with kill and start fault commands.
type ServerKill struct{}

func (ServerKill) Kind() string   { return "server-kill" }
func (ServerKill) Threat() string { return ThreatServerCrash }

func (ServerKill) Ranges() Ranges { return DefaultRanges() }

func (ServerKill) Validate() error { return nil }

func (f ServerKill) Available(t Target) error { return needNodeRestart(f, t) }

func (ServerKill) healsSideBySide() {}

func (f ServerKill) Inject(ctx context.Context, t Target) (Heal, error) {
	if err := t.Process.Kill(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
	}
	return once(func(ctx context.Context) error {
		if err := t.Process.(Restarter).Restart(ctx); err != nil {
			return fmt.Errorf("heal %s %s: %w", f.Kind(), t.Name, err)
		}
		return nil
	}), nil
}

package chaos

import (
	"context"
	"fmt"
	"time"
)

// ServerRestart kills a server process (SIGKILL), waits Delay, starts it
// again on the same port and data dir and waits until it is healthy, all
// within the injection: the fault's window is the downtime. To a lock
// holder this is a server restart: what was not persisted is lost (every
// lock key of locklab's Redis), so another client may take a lock its
// holder still believes in; a Delay of at least the longest TTL is antirez's
// cure.
//
// It is instantaneous to the engine (no heal): the server is back when the
// injection returns, so the window from invoke to ok is the downtime. A
// server that did not come back fails the injection, and the runner's
// health check after the run says so; restarting it silently would hide
// that.
//
// Options: delay (default 0: restart at once). Targets: a node locklab
// runs, or one of the user's with kill and start fault commands.
type ServerRestart struct {
	Delay Duration `yaml:"delay"`
}

func (ServerRestart) Kind() string   { return "server-restart" }
func (ServerRestart) Threat() string { return ThreatServerRestart }

// Ranges: a restart is over when injected; two in three wait up to two
// leases before the server starts again.
func (ServerRestart) Ranges() Ranges {
	return Ranges{Options: []Choice{{Ways: []Way{{Weight: 1}, {Weight: 2, Option: "delay", Span: Span{0, 2}}}}}}
}

func (f ServerRestart) Validate() error {
	if f.Delay < 0 {
		return fmt.Errorf("server-restart: delay %v: want 0 or more", f.Delay)
	}
	return nil
}

func (f ServerRestart) Available(t Target) error { return needNodeRestart(f, t) }

func (f ServerRestart) Inject(ctx context.Context, t Target) (Heal, error) {
	r := t.Process.(Restarter)
	start := func(ctx context.Context) error {
		if err := r.Restart(ctx); err != nil {
			return fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
		}
		return nil
	}
	if err := t.Process.Kill(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
	}
	select {
	case <-time.After(f.Delay.D()):
	case <-ctx.Done():
		// Roll back: a run that ends during the delay still gets its
		// server back.
		return nil, rollback(ctx, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, ctx.Err()), []Heal{start})
	}
	// Once begun, the start is not cut short by the end of ctx: a run
	// that ends while its server starts (a container's start took over
	// 20 s on a busy machine) gets the server back, and the fault's
	// window its true end, rather than a dead server and a start that
	// seems to have failed.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unwindTimeout)
	defer cancel()
	return nil, start(sctx)
}

package chaos

import (
	"context"
	"fmt"
)

// ClientPause stops a client's worker process (SIGSTOP) and resumes it
// (SIGCONT) at the heal, the step's `for` later: its heartbeats, keep-alives
// and renewals stop with it, as in a long GC pause. To a lock holder this is
// the pause of seed fame: its lease expires while it is stopped, another
// client takes the lock, and the holder wakes up believing it still holds.
//
// Options: none (the step's `for` is the pause). Targets: a client whose
// Process is set; goroutine clients cannot be paused, since stopping a
// goroutine would leave its library's heartbeats running.
type ClientPause struct{}

func (ClientPause) Needs() Needs   { return Needs{ClientProcess: true} }
func (ClientPause) Kind() string   { return "client-pause" }
func (ClientPause) Threat() string { return ThreatHolderPause }

// Ranges: a pause from a third of a lease to past two, around its end.
func (ClientPause) Ranges() Ranges { return Ranges{For: Span{0.3, 2.5}} }

func (ClientPause) Validate() error { return nil }

func (f ClientPause) Available(t Target) error { return needClientProcess(f, t) }

func (f ClientPause) Inject(ctx context.Context, t Target) (Heal, error) {
	return pause(f, t)
}

// pause is shared by client-pause and server-pause: SIGSTOP now, SIGCONT at
// the heal.
func pause(f Fault, t Target) (Heal, error) {
	if err := t.Process.Pause(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
	}
	return once(func(context.Context) error {
		if err := t.Process.Resume(); err != nil {
			return fmt.Errorf("heal %s %s: %w", f.Kind(), t.Name, err)
		}
		return nil
	}), nil
}

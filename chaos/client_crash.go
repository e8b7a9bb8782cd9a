package chaos

import (
	"context"
	"fmt"
)

// ClientCrash kills a client's worker process (SIGKILL): it releases
// nothing, and its connections drop as after a real crash. To a lock holder
// this is a crash: a no-expiry lock stays held for ever, a TTL lock until
// its TTL, a session lock until the session times out, a SQL session lock
// until the server notices the dropped connection.
//
// It is instantaneous: there is no heal. The runner replaces the crashed
// client with a new one under a new process id (Jepsen's rule).
//
// Options: none. To crash the holder of key k only while it holds it, aim
// the step at {client: holder, key: k}: the runner's resolver picks the
// current holder at injection time. Targets: a client whose Process is set
// (a goroutine client's runner may offer a Process whose Kill closes its
// locker without releasing).
type ClientCrash struct{}

func (ClientCrash) Needs() Needs   { return Needs{ClientProcess: true} }
func (ClientCrash) Kind() string   { return "client-crash" }
func (ClientCrash) Threat() string { return ThreatHolderCrash }

// Ranges: a crash is over when injected.
func (ClientCrash) Ranges() Ranges { return Ranges{} }

func (ClientCrash) Validate() error { return nil }

func (f ClientCrash) Available(t Target) error { return needClientProcess(f, t) }

func (f ClientCrash) Inject(ctx context.Context, t Target) (Heal, error) {
	if err := t.Process.Kill(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
	}
	return nil, nil
}

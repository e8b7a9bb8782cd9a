package chaos

import (
	"context"
	"fmt"
)

// ClientHang stops a client's own work while its process, connections and
// threads go on (a deadlock, a call that never returns), and lets it go on
// at the heal, the step's `for` later. The holder neither writes nor
// releases meanwhile, and locklab's renewal loop (the workload's `renew`),
// which is the client's own work, stops with it; its lock library's
// threads do not: heartbeats, keep-alives and a watchdog keep running. To a
// lock holder this is the hang the watchdog was not built for: a TTL lock
// expires and is granted again while the hung holder may wake and write; a
// watchdog or a session keeps the lock held for as long as the hang lasts.
//
// Options: none (the step's `for` is the hang). Targets: a client whose
// Process can hang its work alone (Hanger): a worker process or an
// adapter's; a goroutine client has no process to keep alive apart from
// the runner's.
type ClientHang struct{}

// Hanger is a client process whose own steps can stop while the process
// goes on (fleet's processes are).
type Hanger interface {
	Hang() error
	Unhang() error
}

func (ClientHang) Needs() Needs   { return Needs{ClientProcess: true} }
func (ClientHang) Kind() string   { return "client-hang" }
func (ClientHang) Threat() string { return ThreatHolderHang }

func (ClientHang) Ranges() Ranges { return DefaultRanges() }

func (ClientHang) Validate() error { return nil }

func (f ClientHang) Available(t Target) error {
	if err := needClientProcess(f, t); err != nil {
		return err
	}
	if _, ok := t.Process.(Hanger); !ok {
		return unavailable(f, t, "its process cannot stop its work alone")
	}
	return nil
}

func (f ClientHang) Inject(ctx context.Context, t Target) (Heal, error) {
	if err := f.Available(t); err != nil {
		return nil, err
	}
	h := t.Process.(Hanger)
	if err := h.Hang(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.Kind(), t.Name, err)
	}
	return once(func(context.Context) error {
		if err := h.Unhang(); err != nil {
			return fmt.Errorf("heal %s %s: %w", f.Kind(), t.Name, err)
		}
		return nil
	}), nil
}

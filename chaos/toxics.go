package chaos

import (
	"context"
	"errors"
	"fmt"

	"github.com/locklab/locklab/tcpproxy"
)

// addToxics puts the toxics on every proxy and returns the heal that
// removes exactly them (two injections of one kind can share a proxy). If
// an add fails, the toxics already added are removed again.
func addToxics(ctx context.Context, kind string, proxies []*tcpproxy.Proxy, specs ...tcpproxy.Toxic) (Heal, error) {
	var done []*tcpproxy.Added
	remove := func(ctx context.Context) error {
		var errs []error
		for i := len(done) - 1; i >= 0; i-- {
			if err := done[i].Remove(ctx); err != nil {
				errs = append(errs, fmt.Errorf("heal %s: %w", kind, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, p := range proxies {
		for _, spec := range specs {
			a, err := p.Add(spec)
			if err != nil {
				return nil, rollback(ctx, fmt.Errorf("%s: %w", kind, err), []Heal{remove})
			}
			done = append(done, a)
		}
	}
	return once(remove), nil
}

// bothWays is the toxic of kind on each direction.
func bothWays(kind tcpproxy.Kind) []tcpproxy.Toxic {
	return []tcpproxy.Toxic{{Kind: kind, Direction: tcpproxy.Upstream}, {Kind: kind, Direction: tcpproxy.Downstream}}
}

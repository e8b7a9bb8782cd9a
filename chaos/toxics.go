package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// toxic is one toxiproxy toxic as its JSON API takes it.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"` // "upstream" (client to server) or "downstream"
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// addToxics adds the toxics to every proxy, each under a name unique to this
// injection (so two injections of one kind can share a proxy), and returns
// the heal that removes exactly them. If an add fails, the toxics already
// added are removed again.
func addToxics(ctx context.Context, kind string, proxies []*toxiproxy.Proxy, specs ...toxic) (Heal, error) {
	id := make([]byte, 6)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("%s: toxic name: %w", kind, err)
	}
	prefix := "locklab-" + kind + "-" + hex.EncodeToString(id)
	type added struct {
		proxy *toxiproxy.Proxy
		name  string
	}
	var done []added
	remove := func(ctx context.Context) error {
		var errs []error
		for i := len(done) - 1; i >= 0; i-- {
			a := done[i]
			err := removeToxic(ctx, a.proxy, a.name)
			if err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
				errs = append(errs, fmt.Errorf("heal %s on %s: %w", kind, a.proxy.Name, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, p := range proxies {
		for _, spec := range specs {
			spec.Name = prefix + "-" + spec.Stream
			spec.Toxicity = 1
			b, err := json.Marshal(spec)
			if err != nil {
				return nil, err
			}
			if _, err := p.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
				return nil, rollback(ctx, fmt.Errorf("%s on %s: %w", kind, p.Name, err), []Heal{remove})
			}
			done = append(done, added{p, spec.Name})
		}
	}
	return once(remove), nil
}

// toxicRemoveWait bounds one toxic's removal. toxiproxy removes a toxic by
// waiting, with the proxy's toxic lock held, for the toxic to stop on every
// connection; a toxic stuck on a dead connection would hang the heal, and
// the run, for ever. Ours stop within holdFlushWait; past this the heal
// fails, naming the toxic, and the run ends as an infrastructure failure.
const toxicRemoveWait = 30 * time.Second

func removeToxic(ctx context.Context, p *toxiproxy.Proxy, name string) error {
	done := make(chan error, 1)
	go func() { done <- p.Toxics.RemoveToxic(ctx, name) }()
	wait := time.NewTimer(toxicRemoveWait)
	defer wait.Stop()
	select {
	case err := <-done:
		return err
	case <-wait.C:
		return fmt.Errorf("toxiproxy did not remove toxic %s within %v (a connection's toxic is stuck)", name, toxicRemoveWait)
	}
}

package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
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
		toxic toxics.Toxic
	}
	var done []added
	remove := func(ctx context.Context) error {
		var errs []error
		for i := len(done) - 1; i >= 0; i-- {
			a := done[i]
			err := removeToxic(ctx, a.proxy, a.name)
			if h, ok := a.toxic.(*holdToxic); ok && err == nil {
				h.healedAll()
			}
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
			w, err := addToxic(p, b)
			if err != nil {
				return nil, rollback(ctx, fmt.Errorf("%s on %s: %w", kind, p.Name, err), []Heal{remove})
			}
			done = append(done, added{p, spec.Name, w.Toxic})
		}
	}
	return once(remove), nil
}

// addToxic adds the toxic b (its JSON) to p, alone on the proxy (our
// removals take its lock too), once the connections a removal left out of
// step are forgotten.
//
// toxiproxy 2.5.0 removes a toxic from a connection by its place in the
// chain. A removal that finds the connection's stub closed (a dropped
// reply's timeout toxic closes it in its Cleanup; so does ours of a
// partition whose sender had closed, and a stub whose input closed)
// returns without taking the stub out, and the connection keeps more stubs
// than the chain has toxics until it ends, which a partition still holding
// it can put off for as long as it lasts. A toxic added to a connection
// with two stubs too many indexes the chain past its end and panics in
// toxiproxy's own goroutine, which no recover reaches: the whole process
// dies. Such a connection is closing (one of its stubs is closed), so it
// is dropped from the proxy's links, which only adds and removals read:
// its own goroutines still end it, and a hold on it lets go when its heal
// is done (holdToxic.healedAll).
func addToxic(p *toxiproxy.Proxy, b []byte) (*toxics.ToxicWrapper, error) {
	p.Lock()
	defer p.Unlock()
	if err := forgetOutOfStep(p.Toxics); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	return p.Toxics.AddToxicJson(bytes.NewReader(b))
}

// forgetOutOfStep drops every link of c with more stubs than its
// direction's chain has toxics. It reads and writes toxiproxy's
// unexported chain and links by reflection, under the collection's lock;
// go.mod pins the version it knows, and TestAddAfterAClosingRemoval runs
// it.
func forgetOutOfStep(c *toxiproxy.ToxicCollection) error {
	c.Lock()
	defer c.Unlock()
	v := reflect.ValueOf(c).Elem()
	chain, links := v.FieldByName("chain"), v.FieldByName("links")
	if chain.Kind() != reflect.Slice || links.Kind() != reflect.Map {
		return errors.New("toxiproxy: its collection has no chain and links to read (not the version go.mod pins)")
	}
	links = reflect.NewAt(links.Type(), unsafe.Pointer(links.UnsafeAddr())).Elem()
	for _, name := range links.MapKeys() {
		l := links.MapIndex(name).Elem()
		stubs, dir := l.FieldByName("stubs"), l.FieldByName("direction")
		if stubs.Kind() != reflect.Slice || !dir.CanUint() || dir.Uint() >= uint64(chain.Len()) {
			return errors.New("toxiproxy: a link has no stubs and direction to read (not the version go.mod pins)")
		}
		if stubs.Len() > chain.Index(int(dir.Uint())).Len() {
			links.SetMapIndex(name, reflect.Value{})
		}
	}
	return nil
}

// toxicRemoveWait bounds one toxic's removal. toxiproxy removes a toxic by
// waiting, with the proxy's toxic lock held, for the toxic to stop on every
// connection; a toxic stuck on a dead connection would hang the heal, and
// the run, for ever. Ours stop within holdFlushWait; past this the heal
// fails, naming the toxic, and the run ends as an infrastructure failure.
const toxicRemoveWait = 30 * time.Second

func removeToxic(ctx context.Context, p *toxiproxy.Proxy, name string) error {
	done := make(chan error, 1)
	go func() {
		// Alone on the proxy: an add must not run while this removal
		// leaves connections out of step (addToxic).
		p.Lock()
		defer p.Unlock()
		done <- p.Toxics.RemoveToxic(ctx, name)
	}()
	wait := time.NewTimer(toxicRemoveWait)
	defer wait.Stop()
	select {
	case err := <-done:
		return err
	case <-wait.C:
		return fmt.Errorf("toxiproxy did not remove toxic %s within %v (a connection's toxic is stuck)", name, toxicRemoveWait)
	}
}

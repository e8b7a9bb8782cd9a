package chaos

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Faults injected and healed on one proxy in a random order, overlapping,
// while connections come and go through it: toxiproxy 2.5.0 leaves a
// connection whose toxic's removal closed it (a drop's timeout toxic, a
// partition's hold whose sender had closed) among the proxy's links with
// a stub more than the chain, and a toxic added then reaches it, indexes
// the chain past its end and panics in toxiproxy's own goroutine: the test
// binary dies. Every add first drops such connections from the proxy's
// links (addToxic).
func TestAddAfterAClosingRemoval(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	p := toxiproxy.NewProxy(toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), "settle", "127.0.0.1:0", echo.Addr().String())
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	// Traffic: connections that write, read a little and close, some
	// while a fault is on.
	stop := make(chan struct{})
	defer close(stop)
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.Dial("tcp", p.Listen)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(20 * time.Millisecond))
				c.Write([]byte("ping"))
				c.Read(make([]byte, 4))
				c.Close()
			}
		}()
	}
	ctx := context.Background()
	target := Target{Links: []*toxiproxy.Proxy{p}}
	faults := []Fault{DropReplies{}, &Partition{}, &Partition{Mode: "reset"}, &SlowReplies{Latency: Duration(time.Millisecond)}}
	rng := rand.New(rand.NewPCG(1, 2))
	var on []Heal
	for step := 0; step < 400; step++ {
		if len(on) > 0 && (len(on) >= 3 || rng.IntN(2) == 0) {
			k := rng.IntN(len(on))
			if err := on[k](ctx); err != nil {
				t.Fatalf("step %d: heal: %v", step, err)
			}
			on = append(on[:k], on[k+1:]...)
			continue
		}
		f := faults[rng.IntN(len(faults))]
		h, err := f.Inject(ctx, target)
		if err != nil {
			t.Fatalf("step %d: %s: %v", step, f.Kind(), err)
		}
		on = append(on, h)
	}
	for _, h := range on {
		if err := h(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

package tcpproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/stall"
)

// quiet is how long a test waits to conclude that nothing arrives.
const quiet = 200 * time.Millisecond

// echoServer answers every connection with what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func started(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p := New("test", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// throughProxy is a proxy in front of a server the test plays: the proxy,
// and connect, which makes a client's connection through it and gives
// the server's end of it too.
func throughProxy(t *testing.T) (p *Proxy, connect func() (client, server net.Conn)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p = started(t, ln.Addr().String())
	return p, func() (net.Conn, net.Conn) {
		t.Helper()
		c := dial(t, p)
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Close() })
		return c, server
	}
}

// flood writes far more to c than the far side's socket buffers take,
// until a write fails.
func flood(c net.Conn) {
	for range 64 {
		if _, err := c.Write(make([]byte, 1<<20)); err != nil {
			return
		}
	}
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func add(t *testing.T, p *Proxy, tx Toxic) *Added {
	t.Helper()
	a, err := p.Add(tx)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// readFor reads what arrives within d: the bytes, and the error that ended
// the read (a timeout when the connection stayed open and quiet).
func readFor(c net.Conn, n int, d time.Duration) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, n)
	got, err := io.ReadFull(c, buf)
	return buf[:got], err
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func TestPassesBytesInOrder(t *testing.T) {
	p := started(t, echoServer(t))
	c := dial(t, p)
	data := pattern(3<<20 + 7)
	go c.Write(data)
	got, err := readFor(c, len(data), 10*time.Second)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d of %d bytes (%v), or not in order", len(got), len(data), err)
	}
}

// TestHold: nothing passes while held; the removal hands every held byte
// on, in order, before it returns, on the same connection; a connection
// opened during the hold works after it.
func TestHold(t *testing.T) {
	p := started(t, echoServer(t))
	old := dial(t, p)
	if _, err := old.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := readFor(old, 1, 2*time.Second); err != nil {
		t.Fatalf("before the hold: %q %v", got, err)
	}
	up := add(t, p, Toxic{Kind: Hold, Direction: Upstream})
	down := add(t, p, Toxic{Kind: Hold, Direction: Downstream})
	fresh := dial(t, p)
	data := pattern(200 << 10)
	for off := 0; off < len(data); off += 1000 {
		old.Write(data[off:min(off+1000, len(data))])
	}
	fresh.Write([]byte("fresh"))
	if got, err := readFor(old, 1, quiet); len(got) != 0 || !isTimeout(err) {
		t.Fatalf("during the hold %d bytes came back (%v)", len(got), err)
	}
	if err := up.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := readFor(old, 1, quiet); len(got) != 0 || !isTimeout(err) {
		t.Fatalf("with replies still held %d bytes came back (%v)", len(got), err)
	}
	if err := down.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := readFor(old, len(data), 5*time.Second); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after the heal read %d of %d bytes (%v), or not in order", len(got), len(data), err)
	}
	if got, err := readFor(fresh, 5, 2*time.Second); err != nil || string(got) != "fresh" {
		t.Fatalf("the connection opened during the hold: %q %v", got, err)
	}
	if n := p.Toxics(); n != 0 {
		t.Fatalf("%d toxics after both removals", n)
	}
}

// TestOverlappingHolds: removing one of two holds on a direction returns
// at once and keeps the bytes held (closing nothing); the second's
// removal hands them on.
func TestOverlappingHolds(t *testing.T) {
	p := started(t, echoServer(t))
	c := dial(t, p)
	first := add(t, p, Toxic{Kind: Hold, Direction: Upstream})
	second := add(t, p, Toxic{Kind: Hold, Direction: Upstream})
	c.Write([]byte("held"))
	time.Sleep(quiet)
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	if err := first.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > FlushWait/2+stalls.Within(start, start.Add(took)) {
		t.Fatalf("removing one of two holds took %v: it waited for bytes the other still holds", took)
	}
	if got, err := readFor(c, 1, quiet); len(got) != 0 || !isTimeout(err) {
		t.Fatalf("with one hold left: %q %v, want nothing and the connection open", got, err)
	}
	if err := second.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := readFor(c, 4, 2*time.Second); err != nil || string(got) != "held" {
		t.Fatalf("after both removals: %q %v", got, err)
	}
}

// TestHoldDeliversACloseAfterTheBytes: a server that writes and closes
// during a hold has its bytes, then its close, reach the client at the
// heal.
func TestHoldDeliversACloseAfterTheBytes(t *testing.T) {
	p, connect := throughProxy(t)
	c, server := connect()
	down := add(t, p, Toxic{Kind: Hold, Direction: Downstream})
	server.Write([]byte("bye"))
	server.Close()
	if got, err := readFor(c, 1, quiet); len(got) != 0 || !isTimeout(err) {
		t.Fatalf("during the hold: %q %v", got, err)
	}
	if err := down.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := readFor(c, 4, 2*time.Second)
	if string(got) != "bye" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after the heal: %q %v, want \"bye\" then the close", got, err)
	}
}

// TestDrop: the bytes are lost, and the removal closes every connection
// open while the drop was on (opened before it or during it) and no other.
func TestDrop(t *testing.T) {
	p := started(t, echoServer(t))
	old := dial(t, p)
	drop := add(t, p, Toxic{Kind: Drop, Direction: Downstream})
	fresh := dial(t, p)
	old.Write([]byte("lost"))
	fresh.Write([]byte("lost"))
	if got, err := readFor(old, 1, quiet); len(got) != 0 || !isTimeout(err) {
		t.Fatalf("during the drop: %q %v", got, err)
	}
	if err := drop.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]net.Conn{"opened before": old, "opened during": fresh} {
		if got, err := readFor(c, 1, 2*time.Second); len(got) != 0 || isTimeout(err) || err == nil {
			t.Fatalf("%s the drop, after its removal: %q %v, want the connection closed and nothing read", name, got, err)
		}
	}
	after := dial(t, p)
	after.Write([]byte("ok"))
	if got, err := readFor(after, 2, 2*time.Second); err != nil || string(got) != "ok" {
		t.Fatalf("a connection after the drop: %q %v", got, err)
	}
}

// TestSlow: each chunk takes at least the latency; a chunk delayed when
// the toxic goes goes at once; after it, replies are prompt.
func TestSlow(t *testing.T) {
	p := started(t, echoServer(t))
	c := dial(t, p)
	const latency = 300 * time.Millisecond
	slow := add(t, p, Toxic{Kind: Slow, Direction: Downstream, Latency: latency, Jitter: 10 * time.Millisecond})
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	c.Write([]byte("a"))
	if got, err := readFor(c, 1, 5*time.Second); err != nil || string(got) != "a" {
		t.Fatalf("slow reply: %q %v", got, err)
	}
	if took := time.Since(start); took < latency-10*time.Millisecond {
		t.Fatalf("the reply took %v, want at least %v", took, latency-10*time.Millisecond)
	}
	slow2 := add(t, p, Toxic{Kind: Slow, Direction: Downstream, Latency: time.Hour})
	c.Write([]byte("b"))
	time.Sleep(quiet)
	removed := time.Now()
	if err := slow2.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := slow.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := readFor(c, 1, 5*time.Second); err != nil || string(got) != "b" {
		t.Fatalf("the delayed reply after the removals: %q %v", got, err)
	}
	if took := time.Since(removed); took > 2*time.Second+stalls.Within(removed, removed.Add(took)) {
		t.Fatalf("the delayed reply came %v after the removals", took)
	}
}

// TestRemoveWithAReceiverThatReadsNothing: a removal whose held bytes
// cannot be written on gives up when its context ends, closing that
// connection, and says so.
func TestRemoveWithAReceiverThatReadsNothing(t *testing.T) {
	p, connect := throughProxy(t)
	c, _ := connect()
	up := add(t, p, Toxic{Kind: Hold, Direction: Upstream})
	go flood(c)
	time.Sleep(quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := up.Remove(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("removal with a receiver reading nothing: %v, want the context's deadline", err)
	}
	if _, err := readFor(c, 1, 2*time.Second); isTimeout(err) || err == nil {
		t.Fatalf("the connection stayed open: %v", err)
	}
}

// TestRemoveClosesOnlyWhatCouldNotFlush: a removal that gives up on one
// connection (its receiver reads nothing) closes that one only; another
// whose bytes were handed on stays open, whatever order they are waited in.
func TestRemoveClosesOnlyWhatCouldNotFlush(t *testing.T) {
	for range 5 {
		p, connect := throughProxy(t)
		stuck, _ := connect() // its server end reads nothing
		fine, listener := connect()
		up := add(t, p, Toxic{Kind: Hold, Direction: Upstream})
		go flood(stuck)
		fine.Write([]byte("x"))
		time.Sleep(quiet)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := up.Remove(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("removal: %v, want the context's deadline", err)
		}
		if got, err := readFor(listener, 1, 2*time.Second); err != nil || string(got) != "x" {
			t.Fatalf("the held byte of the connection that could flush: %q %v", got, err)
		}
		fine.Write([]byte("y"))
		if got, err := readFor(listener, 1, 2*time.Second); err != nil || string(got) != "y" {
			t.Fatalf("the connection that flushed was closed: %q %v", got, err)
		}
	}
}

func TestStop(t *testing.T) {
	p := New("test", echoServer(t))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	add(t, p, Toxic{Kind: Hold, Direction: Upstream})
	c.Write([]byte("held"))
	p.Stop()
	if _, err := readFor(c, 1, 2*time.Second); isTimeout(err) || err == nil {
		t.Fatalf("a connection after Stop: %v", err)
	}
	if _, err := p.Add(Toxic{Kind: Drop}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Add after Stop: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Listen, time.Second); err == nil {
		t.Fatal("Stop left the listener open")
	}
	p.Stop()
}

func TestAddRefusesBadToxics(t *testing.T) {
	p := New("test", "127.0.0.1:1")
	for _, tx := range []Toxic{{Kind: 7}, {Direction: 5}, {Kind: Slow, Latency: time.Millisecond, Jitter: time.Second}} {
		if _, err := p.Add(tx); err == nil {
			t.Errorf("Add(%+v) succeeded", tx)
		}
	}
}

// TestOverlappingToxicsUnderTraffic: toxics of every kind added and
// removed in a random order, overlapping, while connections come and go
// and data flows: no removal hangs past its flush wait, nothing panics,
// and a connection opened once everything is removed passes data in
// order. Run with -race.
func TestOverlappingToxicsUnderTraffic(t *testing.T) {
	p := started(t, echoServer(t))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
	toxics := []Toxic{{Kind: Hold}, {Kind: Hold, Direction: Downstream}, {Kind: Drop, Direction: Downstream},
		{Kind: Drop}, {Kind: Slow, Direction: Downstream, Latency: time.Millisecond}}
	rng := rand.New(rand.NewPCG(1, 2))
	var on []*Added
	stalls := stall.NewWatch(t.Context())
	for step := 0; step < 400; step++ {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond) // let traffic meet each state
		if len(on) > 0 && (len(on) >= 3 || rng.IntN(2) == 0) {
			k := rng.IntN(len(on))
			start := time.Now()
			if err := on[k].Remove(context.Background()); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if took := time.Since(start); took > FlushWait/2+stalls.Within(start, start.Add(took)) {
				t.Fatalf("step %d: a removal took %v", step, took)
			}
			on = append(on[:k], on[k+1:]...)
			continue
		}
		on = append(on, add(t, p, toxics[rng.IntN(len(toxics))]))
	}
	for _, a := range on {
		if err := a.Remove(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	c := dial(t, p)
	data := pattern(1 << 20)
	go c.Write(data)
	if got, err := readFor(c, len(data), 10*time.Second); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after the storm read %d of %d bytes (%v)", len(got), len(data), err)
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

package adapter

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
)

// The protocol hop in parts, each part a bare line round trip with one
// more of what a request through an adapter has: locklab reading the
// answer in a goroutine of its own and handing it to the caller (as
// Locker does, so that events between requests are read), the adapter
// parsing the request and printing its answer (as Serve does), and the
// whole request through Locker and Serve with the in-memory lock behind.
// Each part is measured alone by BenchmarkHopPart (for counting what the
// machine does in each, e.g. under perf stat) and all alternated in one
// run by BenchmarkHopParts.

// readerEcho is an echoing process whose lines a goroutine reads and
// hands over a channel to the waiting caller.
type readerEcho struct {
	in   io.WriteCloser
	read chan struct{}
}

func startReaderEcho(tb testing.TB) *readerEcho {
	tb.Helper()
	echo := startEcho(tb)
	e := &readerEcho{in: echo.in, read: make(chan struct{}, 1)}
	go func() {
		for {
			if _, err := echo.out.ReadSlice('\n'); err != nil {
				close(e.read)
				return
			}
			e.read <- struct{}{}
		}
	}()
	return e
}

func (e *readerEcho) roundTrip(tb testing.TB) {
	if _, err := io.WriteString(e.in, echoedLine); err != nil {
		tb.Fatal(err)
	}
	if _, ok := <-e.read; !ok {
		tb.Fatal("the echo ended")
	}
}

// hopPart does one round trip or one request.
type hopPart struct {
	name string
	do   func()
}

// hopParts are the parts, in the order they add up, each run after
// another process's round trip.
func hopParts(tb testing.TB) []hopPart {
	echo, reader, answer := startEcho(tb), startReaderEcho(tb), startEchoing(tb, "answer")
	l, err := memoryAdapter(tb).Approach().New(context.Background(), memoryEnv(1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	var held impls.Lease
	request := func() { // an acquire, then a release: one request each
		ctx := context.Background()
		if held == nil {
			if held, err = l.Acquire(ctx, "k", impls.AcquireOptions{TTL: 10 * time.Second}); err != nil {
				tb.Fatal(err)
			}
			return
		}
		if err := held.Release(ctx); err != nil {
			tb.Fatal(err)
		}
		held = nil
	}
	return []hopPart{
		{"echo", func() { echo.roundTrip(tb) }},
		// The same at once again: the echoing process was awake a moment
		// ago (the other parts follow another process's round trip).
		{"echo-again-at-once", func() { echo.roundTrip(tb) }},
		{"echo-read-by-a-goroutine", func() { reader.roundTrip(tb) }},
		{"answered-as-serve-does", func() { answer.roundTrip(tb) }},
		{"request-through-the-protocol", request},
	}
}

// BenchmarkHopPart measures each part alone.
func BenchmarkHopPart(b *testing.B) {
	for _, p := range hopParts(b) {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				p.do()
			}
		})
	}
}

// BenchmarkHopParts alternates the parts, b.N rounds, and reports each
// one's median.
func BenchmarkHopParts(b *testing.B) {
	parts := hopParts(b)
	took := make([][]time.Duration, len(parts))
	b.ResetTimer()
	for range b.N {
		for i, p := range parts {
			start := time.Now()
			p.do()
			took[i] = append(took[i], time.Since(start))
		}
	}
	b.StopTimer()
	echo := median(took[0])
	for i, p := range parts {
		m := median(took[i])
		b.ReportMetric(float64(m.Nanoseconds()), p.name+"-ns")
		if i > 0 {
			b.ReportMetric(float64(m)/float64(echo), p.name+"/echo")
		}
	}
}

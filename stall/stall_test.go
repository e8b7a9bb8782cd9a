package stall

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A probe whose clock jumps by half a second between two wake-ups (as a
// process stopped for that long sees it) reports one stall spanning the
// jump: from its last wake-up before it to the first after it.
func TestRunReportsALateWakeUp(t *testing.T) {
	base := time.Now()
	var jump atomic.Int64
	now := func() int64 { return int64(time.Since(base)) + jump.Load() }
	var mu sync.Mutex
	var got []Span
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	started := now()
	go func() {
		defer close(done)
		Probe{}.Run(ctx, now, func(s Span) {
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
		})
	}()
	time.Sleep(50 * time.Millisecond)
	before := now()
	jump.Store(int64(500 * time.Millisecond))
	after := now()
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	// The stall is the jump plus the real time from the probe's last
	// wake-up before it to its first after: however late a loaded machine
	// woke the probe, no more than its whole run.
	ran := now() - started
	mu.Lock()
	defer mu.Unlock()
	i := slices.IndexFunc(got, func(s Span) bool { return s.Start <= before && s.End >= after })
	if i < 0 {
		t.Fatalf("no stall spans the jump at %d..%d: %v", before, after, got)
	}
	if d := got[i].Duration(); d < 500*time.Millisecond || d > time.Duration(ran) {
		t.Errorf("the stall lasted %v, want 500 ms and at most the probe's whole run (%v)", d, time.Duration(ran))
	}
}

// A probe that is not held up reports nothing: 200 wake-ups on time.
func TestRunOnTimeReportsNothing(t *testing.T) {
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	ctx, cancel := context.WithTimeout(context.Background(), 200*DefaultPeriod)
	defer cancel()
	var got []Span
	// A threshold far beyond any scheduling delay of a loaded machine:
	// only a probe that reports wake-ups on time as late fails.
	Probe{Threshold: 5 * time.Second}.Run(ctx, now, func(s Span) { got = append(got, s) })
	if len(got) > 0 {
		t.Fatalf("stalls reported with nothing held up: %v", got)
	}
}

func TestStalled(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	tests := []struct {
		p    Probe
		s    Span
		want bool
	}{
		{Probe{}, Span{0, ms(10)}, false},  // on time
		{Probe{}, Span{0, ms(110)}, false}, // exactly the threshold late
		{Probe{}, Span{0, ms(111)}, true},  // more than it
		{Probe{Period: 10 * time.Millisecond, Threshold: 250 * time.Millisecond}, Span{0, ms(200)}, false}, // a threshold of its own
		{Probe{Period: time.Millisecond, Threshold: time.Second}, Span{0, ms(1500)}, true},
	}
	for _, tt := range tests {
		if got := tt.p.Stalled(tt.s); got != tt.want {
			t.Errorf("%+v.Stalled(%v lasting %v) = %v, want %v", tt.p, tt.s, tt.s.Duration(), got, tt.want)
		}
	}
}

func TestMinus(t *testing.T) {
	tests := []struct {
		name string
		s    Span
		cuts []Span
		want []Span
	}{
		{"no cut", Span{10, 20}, nil, []Span{{10, 20}}},
		{"cut outside", Span{10, 20}, []Span{{0, 5}, {25, 30}}, []Span{{10, 20}}},
		{"cut covers it", Span{10, 20}, []Span{{5, 25}}, nil},
		{"cut inside", Span{10, 20}, []Span{{12, 15}}, []Span{{10, 12}, {15, 20}}},
		{"cut the start", Span{10, 20}, []Span{{5, 12}}, []Span{{12, 20}}},
		{"cut the end", Span{10, 20}, []Span{{18, 30}}, []Span{{10, 18}}},
		{"open cut runs past it", Span{10, 20}, []Span{{12, 0}}, []Span{{10, 12}}},
		{"two cuts, out of order", Span{10, 40}, []Span{{30, 35}, {15, 20}}, []Span{{10, 15}, {20, 30}, {35, 40}}},
		{"overlapping cuts", Span{10, 40}, []Span{{15, 25}, {20, 30}}, []Span{{10, 15}, {30, 40}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Minus(tt.s, tt.cuts); !slices.Equal(got, tt.want) {
				t.Errorf("Minus(%v, %v) = %v, want %v", tt.s, tt.cuts, got, tt.want)
			}
		})
	}
}

// What Serve writes, Read reads back; other lines are skipped.
func TestServeLinesReadBack(t *testing.T) {
	var out bytes.Buffer
	base := time.Now()
	var jump atomic.Int64
	now := func() int64 { return int64(time.Since(base)) + jump.Load() }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var mu sync.Mutex
	w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
	go func() { done <- Serve(ctx, Probe{}, now, w) }()
	time.Sleep(20 * time.Millisecond)
	jump.Store(int64(300 * time.Millisecond))
	time.Sleep(30 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	text := "starting\n" + out.String() + "{\"start\":5,\"end\":1}\nnot json\n"
	mu.Unlock()
	var got []Span
	if err := Read(strings.NewReader(text), func(s Span) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].Duration() < 300*time.Millisecond {
		t.Fatalf("read %v from %q, want the 300 ms stall", got, text)
	}
	for _, s := range got {
		if s.End <= s.Start {
			t.Errorf("a span ending before it starts was read: %v", s)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// BenchmarkProbeCPU measures what the probe costs: the process's CPU time
// per wake-up, and as a share of one core at the default period (each
// iteration is one period of a running probe, nothing else running).
func BenchmarkProbeCPU(b *testing.B) {
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	wakes := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.ResetTimer()
	start, wall := cpu(), time.Now()
	go func() {
		defer close(done)
		Probe{}.Run(ctx, now, func(Span) {})
	}()
	time.Sleep(time.Duration(b.N) * DefaultPeriod)
	cancel()
	<-done
	used, elapsed := cpu()-start, time.Since(wall)
	wakes = int(elapsed / DefaultPeriod)
	b.StopTimer()
	b.ReportMetric(float64(used.Nanoseconds())/float64(max(wakes, 1)), "cpu-ns/wake")
	b.ReportMetric(100*used.Seconds()/elapsed.Seconds(), "%core")
}

// Within counts only the parts of the stalls between from and to.
func TestWatchWithin(t *testing.T) {
	origin := time.Unix(1000, 0)
	w := &Watch{origin: origin, spans: []Span{{Start: 10e6, End: 30e6}, {Start: 50e6, End: 60e6}}}
	at := func(ms int) time.Time { return origin.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 5, 0},
		{0, 100, 30 * time.Millisecond},
		{20, 55, 15 * time.Millisecond},
		{30, 50, 0},
		{15, 25, 10 * time.Millisecond},
	} {
		if got := w.Within(at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("Within(%d ms, %d ms) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	// A Runqueue watch reports each look's longest wait as a span ending
	// then: spans overlap, and a stretch is counted once.
	w = &Watch{origin: origin, spans: []Span{{Start: 40e6, End: 60e6}, {Start: 10e6, End: 30e6}, {Start: 20e6, End: 50e6}, {Start: 25e6, End: 28e6}, {Start: 70e6, End: 80e6}}}
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 100, 60 * time.Millisecond},
		{0, 25, 15 * time.Millisecond},
		{55, 75, 10 * time.Millisecond},
		{60, 70, 0},
	} {
		if got := w.Within(at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("overlapping: Within(%d ms, %d ms) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// A report that blocks does not hold the probe up: the spans queue and come
// out in order once it is let go, and drain waits for the last.
func TestDetachedNeverBlocksTheProbe(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got []Span
	queue, drain := Detached(func(s Span) {
		<-release
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	})
	// A queue that waited on the report would never return: release is
	// closed only after the loop.
	for i := range 100 {
		queue(Span{Start: int64(i), End: int64(i + 1)})
	}
	close(release)
	drain()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 100 {
		t.Fatalf("%d spans reported, want 100", len(got))
	}
	for i, s := range got {
		if s.Start != int64(i) {
			t.Fatalf("span %d out of order: %+v", i, s)
		}
	}
}

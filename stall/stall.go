// Package stall is the lab's watch on itself: a probe that wakes every few
// milliseconds and reports each wake-up that came much later than asked.
// While a process stands still (the machine starves it, a stop-the-world
// pause, a SIGSTOP), its probe stands still too, and the late wake-up says
// for how long. locklab runs one in its own process, one in every worker
// process and, with servers in containers, one in a container beside them;
// what they report becomes `stall` events in the history, so a verdict can
// tell the lock's misbehaviour from the lab's own.
package stall

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// Defaults: a probe wakes every DefaultPeriod, and a wake-up more than
// DefaultThreshold late is a stall. Go's scheduler preempts every 10 ms
// and Linux's hands a busy core round in tens of milliseconds, so 100 ms
// late is the lab standing still, not the machine being busy. A wake-up
// of an otherwise idle Go process costs about 55 µs of CPU here
// (BenchmarkProbeCPU): every 10 ms that is 0.6% of a core, every 5 ms
// 1.1%, in each worker process.
const (
	DefaultPeriod    = 10 * time.Millisecond
	DefaultThreshold = 100 * time.Millisecond
)

// Probe is how often a probe wakes and how late a wake-up must be to be a
// stall. The zero Probe is the defaults.
type Probe struct {
	Period    time.Duration `json:"period"`
	Threshold time.Duration `json:"threshold"`
}

// Span is a stretch of CLOCK_MONOTONIC time, in nanoseconds.
type Span struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Duration is how long the span lasts.
func (s Span) Duration() time.Duration { return time.Duration(s.End - s.Start) }

func (p Probe) withDefaults() Probe {
	if p.Period <= 0 {
		p.Period = DefaultPeriod
	}
	if p.Threshold <= 0 {
		p.Threshold = DefaultThreshold
	}
	return p
}

// Stalled reports whether a span in which the probe did not run, from one
// wake-up to the next, is a stall: the second came more than the threshold
// after it was due.
func (p Probe) Stalled(s Span) bool {
	p = p.withDefaults()
	return s.Duration()-p.Period > p.Threshold
}

// Run wakes every period until ctx ends, and hands report each stall: the
// span from the last wake-up before it (when the probe was last seen
// running) to the late one. now reads CLOCK_MONOTONIC in nanoseconds
// (clock.Monotonic.Nanos). report is called from Run's goroutine.
func (p Probe) Run(ctx context.Context, now func() int64, report func(Span)) {
	p = p.withDefaults()
	// A timer set again after each wake-up, not a ticker: a ticker keeps
	// its own grid, and a wake-up on it says nothing of how long this
	// goroutine stood still.
	t := time.NewTimer(p.Period)
	defer t.Stop()
	last := now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := now()
		if s := (Span{Start: last, End: n}); p.Stalled(s) {
			report(s)
		}
		last = n
		t.Reset(p.Period)
	}
}

// Minus is s without the spans in cuts: what is left of a stall once the
// stretches a fault stopped the process on purpose (a client pause) are
// taken out. The pieces come in time order; cuts may overlap and come in
// any order. A cut with End 0 is still open: it runs past s.
func Minus(s Span, cuts []Span) []Span {
	left := []Span{s}
	for _, c := range cuts {
		if c.End == 0 {
			c.End = s.End
		}
		var next []Span
		for _, l := range left {
			if c.End <= l.Start || c.Start >= l.End {
				next = append(next, l)
				continue
			}
			if c.Start > l.Start {
				next = append(next, Span{Start: l.Start, End: c.Start})
			}
			if c.End < l.End {
				next = append(next, Span{Start: c.End, End: l.End})
			}
		}
		left = next
	}
	return left
}

// Serve runs a probe until ctx ends and writes each stall to w as one JSON
// line ({"start":ns,"end":ns}), after a first line saying it runs
// ({"running":true}): `locklab probe`, the probe in a container beside the
// servers, whose lines locklab reads from the container's output.
func Serve(ctx context.Context, p Probe, now func() int64, w io.Writer) error {
	if _, err := io.WriteString(w, `{"running":true}`+"\n"); err != nil {
		return err
	}
	var werr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	report, drain := Detached(func(s Span) {
		b, _ := json.Marshal(s) // two integers: cannot fail
		if _, err := w.Write(append(b, '\n')); err != nil && werr == nil {
			werr = err
			cancel()
		}
	})
	p.Run(ctx, now, report)
	drain()
	return werr
}

// Detached hands each span to report from a goroutine of its own, in
// order, so that the probe never waits on report's output (a write to a
// pipe someone else drains): a probe held up by its own write would time
// that wait as the next stall. drain waits until every span queued so far
// was reported.
func Detached(report func(Span)) (queue func(Span), drain func()) {
	var (
		mu      sync.Mutex
		pending []Span
		closed  bool
	)
	more := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			mu.Lock()
			batch, last := pending, closed
			pending = nil
			mu.Unlock()
			for _, s := range batch {
				report(s)
			}
			if last && len(batch) == 0 {
				return
			}
			if len(batch) == 0 {
				<-more
			}
		}
	}()
	queue = func(s Span) {
		mu.Lock()
		pending = append(pending, s)
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
	}
	drain = func() {
		mu.Lock()
		closed = true
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
		<-done
	}
	return queue, drain
}

// Read reads the lines Serve writes and hands each stall to fn, until r
// ends. A line that is not a stall (the first, the container's own noise)
// is skipped.
func Read(r io.Reader, fn func(Span)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var s Span
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.End <= s.Start {
			continue
		}
		fn(s)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stalls: %w", err)
	}
	return nil
}

// Watch records when this process stood still, for a bound that must allow
// for it: a test's "within 100 ms" means 100 ms of running, not of waiting
// for a core. Its probe wakes every millisecond and calls 5 ms late a stall.
type Watch struct {
	origin time.Time
	mu     sync.Mutex
	spans  []Span // ns since origin
}

// NewWatch starts a Watch that records until ctx ends.
func NewWatch(ctx context.Context) *Watch {
	w := &Watch{origin: time.Now()}
	p := Probe{Period: time.Millisecond, Threshold: 5 * time.Millisecond}
	go p.Run(ctx, w.since, w.add)
	return w
}

// NewRunqueueWatch starts a Watch of the processes procs lists (servers
// locklab runs here) rather than of this one: each wait of a thread of
// theirs for a CPU of threshold or more (Runqueue), until ctx ends. A
// server starved of a CPU does its own timing late (a ZooKeeper expires a
// session late) though its answers to a client may still come quickly.
func NewRunqueueWatch(ctx context.Context, threshold time.Duration, procs func() []int) *Watch {
	w := &Watch{origin: time.Now()}
	list := func() map[string][]int { return map[string][]int{"": procs()} }
	// Listed again each second: a restarted server has new pids.
	go Runqueue{Threshold: threshold, ListEvery: time.Second}.Run(ctx, w.since, list, func(_ string, s Span) { w.add(s) })
	return w
}

func (w *Watch) since() int64 { return int64(time.Since(w.origin)) }

func (w *Watch) add(s Span) {
	w.mu.Lock()
	w.spans = append(w.spans, s)
	w.mu.Unlock()
}

// Within is how long the process stood still between from and to: the
// union of its stalls there (a Runqueue watch's spans may overlap).
func (w *Watch) Within(from, to time.Time) time.Duration {
	a, b := int64(from.Sub(w.origin)), int64(to.Sub(w.origin))
	w.mu.Lock()
	var cut []Span
	for _, s := range w.spans {
		if lo, hi := max(s.Start, a), min(s.End, b); hi > lo {
			cut = append(cut, Span{Start: lo, End: hi})
		}
	}
	w.mu.Unlock()
	slices.SortFunc(cut, func(x, y Span) int { return cmp.Compare(x.Start, y.Start) })
	var still, reached int64
	for _, s := range cut {
		if s.Start > reached {
			reached = s.Start
		}
		if s.End > reached {
			still += s.End - reached
			reached = s.End
		}
	}
	return time.Duration(still)
}

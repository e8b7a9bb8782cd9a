// Package clock gives the lab one notion of time: CLOCK_MONOTONIC nanoseconds
// for history events (identical across processes on one machine, so histories
// from worker processes merge exactly) and a skewable wall clock per client
// for lease arithmetic.
package clock

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Monotonic converts Go's monotonic time readings into CLOCK_MONOTONIC
// nanoseconds. Go's runtime reads the same clock, so one syscall at start-up
// gives the offset and every later reading costs only time.Since.
type Monotonic struct {
	base  time.Time
	baseN int64
}

// anchorTries is how many bracketed readings NewMonotonic takes.
const anchorTries = 16

// NewMonotonic anchors Go's clock to CLOCK_MONOTONIC. Every process of a
// run anchors its own, and their histories merge on the result, so the
// anchor must be exact: a process preempted between its two readings
// (milliseconds on a loaded machine) would stamp all its events that much
// late, and a release would seem to come after the next holder's grant.
func NewMonotonic() *Monotonic {
	return anchor(func() (int64, bool) {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			return 0, false // cannot happen on Linux
		}
		return ts.Nano(), true
	})
}

// anchor brackets kernel readings between two Go readings and keeps the
// narrowest bracket, taking the kernel reading to be at its middle: the
// error is at most half the narrowest bracket's width (well under a
// microsecond unless every try was preempted).
func anchor(kernel func() (int64, bool)) *Monotonic {
	var best *Monotonic
	bestWidth := time.Duration(-1)
	for range anchorTries {
		before := time.Now()
		n, ok := kernel()
		width := time.Since(before)
		if !ok {
			return &Monotonic{base: before} // a process-local origin
		}
		if bestWidth < 0 || width < bestWidth {
			best, bestWidth = &Monotonic{base: before.Add(width / 2), baseN: n}, width
		}
	}
	return best
}

// Nanos returns the current CLOCK_MONOTONIC reading in nanoseconds.
func (m *Monotonic) Nanos() int64 { return m.baseN + int64(time.Since(m.base)) }

// NanosAt converts a Go time (with monotonic reading) taken in this process.
func (m *Monotonic) NanosAt(t time.Time) int64 { return m.baseN + int64(t.Sub(m.base)) }

// Clock is what lock implementations use for lease arithmetic instead of
// time.Now, so chaos can skew one client's idea of time.
type Clock interface {
	Now() time.Time
}

// Skewable is a wall clock with an adjustable offset, safe for concurrent use.
type Skewable struct {
	offset atomic.Int64
}

// Now returns the real time moved by the current offset.
func (s *Skewable) Now() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) }

// SetOffset moves this clock by d relative to real time.
func (s *Skewable) SetOffset(d time.Duration) { s.offset.Store(int64(d)) }

// Shift moves this clock by d from where it stands, in one step: moves
// made at once all count.
func (s *Skewable) Shift(d time.Duration) { s.offset.Add(int64(d)) }

// Offset reports the current offset.
func (s *Skewable) Offset() time.Duration { return time.Duration(s.offset.Load()) }

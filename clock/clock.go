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

// NewMonotonic reads CLOCK_MONOTONIC once and anchors Go's clock to it.
func NewMonotonic() *Monotonic {
	var ts unix.Timespec
	base := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// Cannot happen on Linux; fall back to a process-local origin.
		return &Monotonic{base: base}
	}
	return &Monotonic{base: base, baseN: ts.Nano()}
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

// Offset reports the current offset.
func (s *Skewable) Offset() time.Duration { return time.Duration(s.offset.Load()) }

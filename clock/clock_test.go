package clock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMonotonicMatchesKernelClock: a reading lies between two kernel
// readings taken around it, up to the anchoring error of NewMonotonic (the
// instant between its two clock reads, never negative). A preemption on a
// loaded machine can widen one anchoring or one bracket, not five in a row,
// so the best of five attempts must be within 1 ms, and no reading may ever
// come before the kernel reading taken ahead of it.
func TestMonotonicMatchesKernelClock(t *testing.T) {
	kernel := func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return ts.Nano()
	}
	best := time.Duration(1<<63 - 1)
	for range 5 {
		m := NewMonotonic()
		time.Sleep(5 * time.Millisecond)
		before := kernel()
		got := m.Nanos()
		after := kernel()
		if got < before {
			t.Fatalf("Nanos %d is before the kernel reading taken ahead of it (%d)", got, before)
		}
		best = min(best, time.Duration(got-after))
	}
	if best > time.Millisecond {
		t.Fatalf("Nanos is %v past CLOCK_MONOTONIC in the best of 5 attempts, want under 1ms", best)
	}
}

func TestSkewableOffset(t *testing.T) {
	var c Skewable
	c.SetOffset(time.Hour)
	if d := time.Until(c.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("skewed clock is %v ahead, want about 1h", d)
	}
	if c.Offset() != time.Hour {
		t.Fatalf("Offset = %v", c.Offset())
	}
}

// A process preempted between its Go reading and its kernel reading must
// not stamp its events late by the preemption: the anchor keeps the
// narrowest of its bracketed tries.
func TestAnchorSurvivesAPreemptedReading(t *testing.T) {
	kernelNow := func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return ts.Nano()
	}
	tries := 0
	m := anchor(func() (int64, bool) {
		tries++
		if tries <= 3 {
			// Preempted after the Go reading, before the kernel's.
			time.Sleep(2 * time.Millisecond)
		}
		return kernelNow(), true
	})
	before := kernelNow()
	got := m.Nanos()
	after := kernelNow()
	if got < before-int64(100*time.Microsecond) || got > after+int64(100*time.Microsecond) {
		t.Fatalf("Nanos %d outside the kernel's [%d, %d] by more than 100µs (%v late)", got, before, after, time.Duration(got-after))
	}
}

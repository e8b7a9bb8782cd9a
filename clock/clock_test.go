package clock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMonotonicMatchesKernelClock(t *testing.T) {
	m := NewMonotonic()
	time.Sleep(5 * time.Millisecond)
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	got := m.Nanos()
	if d := got - ts.Nano(); d < -int64(time.Millisecond) || d > int64(time.Millisecond) {
		t.Fatalf("Nanos differs from CLOCK_MONOTONIC by %v", time.Duration(d))
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

package adapter

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// wallClock is the adapter's own wall clock, as it tells it.
func wallClock(t *testing.T, l *Locker) time.Time {
	t.Helper()
	_, err := l.Acquire(context.Background(), "k", impls.AcquireOptions{Try: true})
	if !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("acquire: %v, want its refusal", err)
	}
	s := err.Error()
	f, perr := strconv.ParseFloat(s[strings.LastIndex(s, " ")+1:], 64)
	if perr != nil {
		t.Fatalf("reason %q: %v", s, perr)
	}
	return time.Unix(0, int64(f*float64(time.Second)))
}

// TestProcessClockFollowsTheClientClock: an adapter started with
// ProcessClock reads a wall clock that moves with the client's lease
// clock (a jump ahead, and back); without it, its clock is the machine's.
func TestProcessClockFollowsTheClientClock(t *testing.T) {
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Name: "wall-clock", Argv: []string{"/usr/bin/python3", "wall_clock_adapter.py"}, Dir: dir,
		Server: impls.Redis, StartTimeout: 5 * time.Second}
	const jump = time.Hour
	for _, follows := range []bool{true, false} {
		t.Run(map[bool]string{true: "follows", false: "machine's"}[follows], func(t *testing.T) {
			clk := &clock.Skewable{}
			l, err := Start(context.Background(), spec, impls.Env{Clock: clk, ClientID: 1, ProcessClock: follows})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if d := time.Since(wallClock(t, l)); d.Abs() > 5*time.Second {
				t.Fatalf("before the jump the adapter's clock is %v off the machine's", d)
			}
			clk.SetOffset(jump)
			// libfaketime re-reads the offset once a second: ask until it
			// moved, for a few seconds.
			want := time.Duration(0)
			if follows {
				want = jump
			}
			var off time.Duration
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if off = wallClock(t, l).Sub(time.Now()); (off - want).Abs() < 5*time.Second {
					break
				}
			}
			if (off - want).Abs() > 5*time.Second {
				t.Fatalf("after a jump of %v on the client clock, the adapter's clock is %v off the machine's, want %v", jump, off, want)
			}
			clk.SetOffset(0)
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if off = wallClock(t, l).Sub(time.Now()); off.Abs() < 5*time.Second {
					break
				}
			}
			if off.Abs() > 5*time.Second {
				t.Fatalf("after the jump back, the adapter's clock is %v off the machine's", off)
			}
		})
	}
}

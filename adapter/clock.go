package adapter

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/locklab/locklab/internal/faketime"
)

// An adapter is a process of its own, whose library reads its host's wall
// clock (a lock row's expiry, a stale-lock reaper). With impls.Env's
// ProcessClock it runs under libfaketime, and its wall clock follows the
// client's lease clock: a client-clock fault moves both. A Go adapter reads
// the clock through the vDSO, which libfaketime cannot reach: its clock
// stays (as etcd's does for server-clock).

// clockFollow is how often the adapter's offset file follows the client's
// clock (a drift moves it every 10 ms).
const clockFollow = 10 * time.Millisecond

// offsetter is the client clock's offset, which the fault moves
// (clock.Skewable).
type offsetter interface{ Offset() time.Duration }

// processClock prepares the adapter's offset file; the environment that
// puts it under libfaketime reading it, or why not.
func (l *Locker) processClock() ([]string, error) {
	if _, ok := l.clk.(offsetter); !ok {
		return nil, fmt.Errorf("the client's clock cannot be read for its offset")
	}
	if err := faketime.Installed(false); err != nil {
		return nil, fmt.Errorf("adapter %w", err)
	}
	dir, err := os.MkdirTemp("", "locklab-clock-")
	if err != nil {
		return nil, fmt.Errorf("adapter clock: %w", err)
	}
	l.clockFile = filepath.Join(dir, "faketime.rc")
	if err := faketime.Write(l.clockFile, l.clk.(offsetter).Offset()); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(pythonSleep), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("adapter clock: %w", err)
	}
	pythonPath := dir
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pythonPath += string(os.PathListSeparator) + p
	}
	// Re-read once a second: a JVM adapter (Curator) reads its clock too
	// often to re-read the file at every call.
	return append(faketime.Vars(l.clockFile, false, false), "PYTHONPATH="+pythonPath), nil
}

// pythonSleep is a sitecustomize for a Python adapter under libfaketime.
// Python 3.11's time.sleep waits with clock_nanosleep(CLOCK_MONOTONIC,
// TIMER_ABSTIME), which Debian's libfaketime 0.9.10 hands the kernel as a
// negative time when the monotonic clock is not faked
// (wolfcw/libfaketime#426): every sleep failed with EINVAL, whatever the
// offset, and py-redis-lock's waiter died on its first retry. A relative
// wait (select) sleeps as long and leaves the wall clock faked. The
// sitecustomize this one shadows (Debian's apport hook) is run after it.
const pythonSleep = `import os, select, sys, time


def _sleep(seconds):
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    select.select([], [], [], seconds)


time.sleep = _sleep

_here = os.path.dirname(os.path.abspath(__file__))
for _dir in sys.path:
    _next = os.path.join(_dir or ".", "sitecustomize.py")
    if os.path.abspath(_dir or ".") != _here and os.path.isfile(_next):
        with open(_next) as _f:
            exec(compile(_f.read(), _next, "exec"), {"__name__": "sitecustomize", "__file__": _next})
        break
`

// followClock keeps the offset file at the client clock's offset until
// the adapter is gone, then removes it.
func (l *Locker) followClock() {
	defer os.RemoveAll(filepath.Dir(l.clockFile))
	clk := l.clk.(offsetter)
	last := clk.Offset()
	t := time.NewTicker(clockFollow)
	defer t.Stop()
	for {
		select {
		case <-l.exited:
			return
		case <-t.C:
			if d := clk.Offset(); d != last {
				if faketime.Write(l.clockFile, d) == nil {
					last = d
				}
			}
		}
	}
}

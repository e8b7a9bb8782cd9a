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
	// Re-read once a second: a JVM adapter (Curator) reads its clock too
	// often to re-read the file at every call.
	return faketime.Vars(l.clockFile, false, false), nil
}

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

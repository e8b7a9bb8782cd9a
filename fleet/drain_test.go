package fleet

import (
	"io"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/spawn"
)

// A process that writes lines as fast as it can is stopped while the
// reader, slower, has a pipe full of them: stoppedAndDrained returns only
// once every line it wrote was handled, so none is handled after it.
func TestStoppedAndDrained(t *testing.T) {
	sp := spawn.New()
	defer sp.Close()
	p, err := startProcess(sp, []string{"sh", "-c", "i=0; while :; do echo line$i; i=$((i+1)); done"}, io.Discard, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}()
	var handled atomic.Int64
	go func() {
		sc := p.lines()
		for sc.Scan() {
			// A handler slower than the writer: the pipe fills.
			if handled.Add(1)%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	for handled.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	before := handled.Load()
	if !p.stoppedAndDrained(10 * time.Second) {
		t.Fatal("not stopped and drained within 10 s")
	}
	at := handled.Load()
	time.Sleep(100 * time.Millisecond)
	if after := handled.Load(); after != at {
		t.Errorf("%d lines handled after the drain (%d at the stop, %d at the drain)", after-at, before, at)
	}
	if at == before {
		t.Logf("the pipe was empty at the stop: nothing to drain (%d lines)", at)
	}
}

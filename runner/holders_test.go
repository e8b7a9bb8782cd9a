package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/history"
)

// ev is one event of proc's on key, for the holders view.
func ev(proc int, typ history.Type, f, key string) history.Event {
	return history.Event{Proc: proc, Type: typ, F: f, Key: key}
}

// The holders view says whether a crashed process held a key when its
// crash was recorded: what a holder crash is checked against.
func TestHoldersHeldAtCrash(t *testing.T) {
	for _, tt := range []struct {
		name   string
		events []history.Event
		want   bool
	}{
		{"crashed holding", []history.Event{ev(1, history.OK, history.Acquire, "k")}, true},
		{"crashed after its release went out", []history.Event{
			ev(1, history.OK, history.Acquire, "k"), ev(1, history.Invoke, history.Release, "k")}, false},
		{"another process holds", []history.Event{ev(2, history.OK, history.Acquire, "k")}, false},
		{"held another key", []history.Event{ev(1, history.OK, history.Acquire, "j")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHolders()
			for _, e := range tt.events {
				h.see(e)
			}
			h.see(history.Event{Proc: 1, Type: history.Info, F: history.Crash})
			got, err := h.heldAtCrash(1, "k", time.Second)
			if err != nil || got != tt.want {
				t.Fatalf("heldAtCrash = %v, %v; want %v", got, err, tt.want)
			}
			if h.holds(1, "k") {
				t.Fatal("a crashed process still counts as holding")
			}
		})
	}
	if _, err := newHolders().heldAtCrash(1, "k", 10*time.Millisecond); err == nil {
		t.Fatal("a crash never recorded must be an error, not a silent false")
	}
}

// A holder pause that lands on a client whose release was already on its
// way is undone and moved to the key's next holder.
func TestHolderPauseMovesToTheNextHolder(t *testing.T) {
	slot := func() signalled { return sleeper(t) }
	stopped := func(s signalled) bool { return isStopped(t, s) }
	h := newHolders()
	a, b := slot(), slot()
	h.bind(1, 0)
	h.bind(2, 1)
	r := &resolver{holders: h, slots: []fleet.Slot{{Index: 0, Process: a}, {Index: 1, Process: b}}}
	h.see(history.Event{Proc: 1, Type: history.OK, F: history.Acquire, Key: "k"})
	p := &holderProcess{r: r, key: "k", slot: a, proc: 1}
	// Process 1's release, sent before its stop, arrives during the
	// settle; process 2 takes the key.
	go func() {
		time.Sleep(holderSettle / 5)
		h.see(history.Event{Proc: 1, Type: history.Invoke, F: history.Release, Key: "k"})
		h.see(history.Event{Proc: 2, Type: history.OK, F: history.Acquire, Key: "k"})
	}()
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if stopped(a) || !stopped(b) {
		t.Fatalf("process 1 stopped %v, process 2 stopped %v; want only process 2, the holder", stopped(a), stopped(b))
	}
	if err := p.Resume(); err != nil || stopped(b) {
		t.Fatalf("resume: %v; process 2 stopped %v", err, stopped(b))
	}
}

// A holder pause (or hang) passes over a holder that has already written
// to the protected store: stopped between its write and its release, it
// could write nothing stale. The key's next holder is stopped instead.
func TestHolderPausePassesOverAHolderThatWrote(t *testing.T) {
	start := func() signalled { return sleeper(t) }
	stopped := func(s signalled) bool { return isStopped(t, s) }
	h := newHolders()
	a, b := start(), start()
	h.bind(1, 0)
	h.bind(2, 1)
	r := &resolver{holders: h, slots: []fleet.Slot{{Index: 0, Process: a}, {Index: 1, Process: b}}}
	h.see(history.Event{Proc: 1, Type: history.OK, F: history.Acquire, Key: "k"})
	h.see(history.Event{Proc: 1, Type: history.OK, F: history.Write, Key: "k"})
	if h.working(1, "k") || !h.holds(1, "k") {
		t.Fatal("a holder that wrote still holds, but is no longer working")
	}
	go func() {
		time.Sleep(holderSettle / 5)
		h.see(history.Event{Proc: 1, Type: history.Invoke, F: history.Release, Key: "k"})
		h.see(history.Event{Proc: 2, Type: history.OK, F: history.Acquire, Key: "k"})
	}()
	p := &holderProcess{r: r, key: "k"}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if stopped(a) || !stopped(b) {
		t.Fatalf("process 1 stopped %v, process 2 stopped %v; want only process 2, which had not written", stopped(a), stopped(b))
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
}

// sleeper is a process for a slot, killed when the test ends.
func sleeper(t *testing.T) signalled {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return signalled{cmd}
}

// isStopped reports whether s's process is stopped (SIGSTOP).
func isStopped(t *testing.T, s signalled) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "T")
}

// signalled stands in for a worker process in its slot: holderProcess
// needs only its signals.
type signalled struct{ cmd *exec.Cmd }

func (s signalled) Pause() error  { return s.cmd.Process.Signal(syscall.SIGSTOP) }
func (s signalled) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }
func (s signalled) Kill() error   { return s.cmd.Process.Kill() }
func (s signalled) Hang() error   { return nil }
func (s signalled) Unhang() error { return nil }

// A waiter of a key is a client whose acquire of it was asked and not yet
// answered, and that does not hold it: what `client: waiter` pauses.
func TestHoldersWaiterOf(t *testing.T) {
	for _, tt := range []struct {
		name   string
		events []history.Event
		want   int // slot; -1: none
	}{
		{"asked, unanswered", []history.Event{ev(1, history.Invoke, history.Acquire, "k")}, 1},
		{"process 0, nobody holding", []history.Event{ev(0, history.Invoke, history.Acquire, "k")}, 0},
		{"the lowest slot of two", []history.Event{
			ev(2, history.Invoke, history.Acquire, "k"), ev(1, history.Invoke, history.Acquire, "k")}, 1},
		{"granted: a holder, not a waiter", []history.Event{
			ev(1, history.Invoke, history.Acquire, "k"), ev(1, history.OK, history.Acquire, "k")}, -1},
		{"refused", []history.Event{
			ev(1, history.Invoke, history.Acquire, "k"), ev(1, history.Fail, history.Acquire, "k")}, -1},
		{"crashed while waiting", []history.Event{
			ev(1, history.Invoke, history.Acquire, "k"), ev(1, history.Info, history.Crash, "")}, -1},
		{"waits for another key", []history.Event{ev(1, history.Invoke, history.Acquire, "j")}, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHolders()
			h.bind(0, 0)
			h.bind(1, 1)
			h.bind(2, 2)
			for _, e := range tt.events {
				h.see(e)
			}
			slot, _, err := h.waiterOf(context.Background(), "k", 10*time.Millisecond)
			if tt.want < 0 {
				if err == nil {
					t.Fatalf("waiterOf = slot %d; want none", slot)
				}
				return
			}
			if err != nil || slot != tt.want {
				t.Fatalf("waiterOf = %d, %v; want slot %d", slot, err, tt.want)
			}
		})
	}
}

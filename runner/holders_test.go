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

// The holders view says whether a crashed process held a key when its
// crash was recorded: what a holder crash is checked against.
func TestHoldersHeldAtCrash(t *testing.T) {
	ev := func(proc int, typ history.Type, f, key string) history.Event {
		return history.Event{Proc: proc, Type: typ, F: f, Key: key}
	}
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
			h := newHolders(0, 0)
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
	if _, err := newHolders(0, 0).heldAtCrash(1, "k", 10*time.Millisecond); err == nil {
		t.Fatal("a crash never recorded must be an error, not a silent false")
	}
}

// A holder pause that lands on a client whose release was already on its
// way is undone and moved to the key's next holder.
func TestHolderPauseMovesToTheNextHolder(t *testing.T) {
	slot := func() signalled {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return signalled{cmd}
	}
	stopped := func(s signalled) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "T")
	}
	h := newHolders(0, 0)
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

// signalled stands in for a worker process in its slot: holderProcess
// needs only its signals.
type signalled struct{ cmd *exec.Cmd }

func (s signalled) Pause() error  { return s.cmd.Process.Signal(syscall.SIGSTOP) }
func (s signalled) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }
func (s signalled) Kill() error   { return s.cmd.Process.Kill() }
func (s signalled) Hang() error   { return nil }
func (s signalled) Unhang() error { return nil }

// A fault aimed at "the holder" prefers a holder granted less than its
// workload's shortest hold ago: one holding longer may be finishing, so
// holderOf waits for the next grant; with no next grant within its
// patience it takes the holder there is.
func TestHolderOfPrefersAFreshGrant(t *testing.T) {
	h := newHolders(50*time.Millisecond, 100*time.Millisecond)
	h.bind(1, 0)
	h.bind(2, 1)
	h.see(history.Event{Proc: 1, Type: history.OK, F: history.Acquire, Key: "k"})
	if slot, _, err := h.holderOf(context.Background(), "k", time.Second); err != nil || slot != 0 {
		t.Fatalf("a holder granted just now: slot %d, %v; want slot 0", slot, err)
	}
	time.Sleep(60 * time.Millisecond) // process 1 has held past the shortest hold
	go func() {
		time.Sleep(30 * time.Millisecond)
		h.see(history.Event{Proc: 1, Type: history.Invoke, F: history.Release, Key: "k"})
		h.see(history.Event{Proc: 2, Type: history.OK, F: history.Acquire, Key: "k"})
	}()
	if slot, proc, err := h.holderOf(context.Background(), "k", time.Second); err != nil || slot != 1 || proc != 2 {
		t.Fatalf("after a hold of a while: slot %d, process %d, %v; want the next holder, process 2 in slot 1", slot, proc, err)
	}
	// Process 2 holds on and nobody else is granted: patience (the longest
	// hold and 1 s) runs out and process 2 it is.
	time.Sleep(60 * time.Millisecond)
	began := time.Now()
	if slot, _, err := h.holderOf(context.Background(), "k", 5*time.Second); err != nil || slot != 1 {
		t.Fatalf("a holder holding on: slot %d, %v; want slot 1", slot, err)
	}
	if waited := time.Since(began); waited < time.Second || waited > 3*time.Second {
		t.Fatalf("waited %v for a fresh grant, want its patience (1.1 s)", waited)
	}
}

package runner

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/internal/procstat"
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
	st, err := procstat.Read(s.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.Stopped()
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
			slot, _, err := h.waiterOf(context.Background(), "k", 10*time.Millisecond, true)
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

// A waiter's process is taken while another client holds the key and
// works: with the key free as locklab sees it the waiter's grant may be on
// its way. Only after half the wait is any waiter taken. Its links are
// taken at once: a reply lost as the key comes free is what they are for.
func TestHoldersWaiterWhileAnotherWorks(t *testing.T) {
	h := newHolders()
	for i := range 3 {
		h.bind(i, i)
	}
	h.see(ev(1, history.Invoke, history.Acquire, "k")) // waits; nobody holds
	if slot, _, err := h.waiterOf(context.Background(), "k", time.Minute, false); err != nil || slot != 1 {
		t.Fatalf("waiterOf(links) = %d, %v with the key free; want slot 1 at once", slot, err)
	}
	got := make(chan int, 1)
	go func() {
		slot, _, err := h.waiterOf(context.Background(), "k", time.Minute, true)
		if err != nil {
			slot = -1
		}
		got <- slot
	}()
	select {
	case s := <-got:
		t.Fatalf("waiterOf = %d with the key free, before anyone held it", s)
	case <-time.After(100 * time.Millisecond):
	}
	h.see(ev(2, history.Invoke, history.Acquire, "k"))
	h.see(ev(2, history.OK, history.Acquire, "k"))
	if s := <-got; s != 1 {
		t.Fatalf("waiterOf = %d once client 2 held the key, want 1", s)
	}
}

// recordedSlot stands in for a worker whose crash the fleet records: Kill
// records the crash in h, as the fleet does once the process is gone.
type recordedSlot struct {
	h      *holders
	proc   int
	mu     sync.Mutex
	calls  []string
	onHang func()
}

func (s *recordedSlot) note(c string) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}
func (s *recordedSlot) Pause() error  { s.note("pause"); return nil }
func (s *recordedSlot) Resume() error { s.note("resume"); return nil }
func (s *recordedSlot) Unhang() error { s.note("unhang"); return nil }
func (s *recordedSlot) Hang() error {
	s.note("hang")
	if s.onHang != nil {
		go s.onHang()
	}
	return nil
}
func (s *recordedSlot) Kill() error {
	s.note("kill")
	s.h.see(history.Event{Proc: s.proc, Type: history.Info, F: history.Crash})
	return nil
}
func (s *recordedSlot) called() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.calls, " ")
}

// A holder crash hangs the holder before it kills it, and kills it only
// once the history shows it holding: one whose release was on its way is
// killed at its next grant, so the crash always takes a held lock with it.
func TestHolderCrashWaitsForAHungHolderToHold(t *testing.T) {
	for _, tt := range []struct {
		name    string
		later   []history.Event // what arrives after the hang
		want    string          // process 1's calls
		crashed bool            // process 1 crashed holding k
	}{
		{"holding", nil, "hang kill", true},
		{"let go, granted again", []history.Event{
			ev(1, history.Invoke, history.Release, "k"), ev(2, history.OK, history.Acquire, "k"),
			ev(2, history.Invoke, history.Release, "k"), ev(1, history.OK, history.Acquire, "k")}, "hang kill", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHolders()
			h.bind(1, 0)
			a := &recordedSlot{h: h, proc: 1}
			a.onHang = func() {
				for _, e := range tt.later {
					h.see(e)
				}
			}
			r := &resolver{holders: h, slots: []fleet.Slot{{Index: 0, Process: a}}}
			h.see(ev(1, history.OK, history.Acquire, "k"))
			p := &holderProcess{r: r, key: "k"}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			if got := a.called(); got != tt.want {
				t.Errorf("process 1: %q, want %q", got, tt.want)
			}
			if held, _ := h.heldAtCrash(1, "k", time.Second); held != tt.crashed {
				t.Errorf("crashed holding k: %v, want %v", held, tt.crashed)
			}
		})
	}
}

// A hung holder that is not granted the key again in time is let go on,
// and the crash goes to the key's next holder.
func TestHolderCrashMovesOnFromAHolderNotGrantedAgain(t *testing.T) {
	h := newHolders()
	h.bind(1, 0)
	h.bind(2, 1)
	a, b := &recordedSlot{h: h, proc: 1}, &recordedSlot{h: h, proc: 2}
	a.onHang = func() {
		h.see(ev(1, history.Invoke, history.Release, "k"))
		h.see(ev(2, history.OK, history.Acquire, "k"))
	}
	r := &resolver{holders: h, slots: []fleet.Slot{{Index: 0, Process: a}, {Index: 1, Process: b}}}
	h.see(ev(1, history.OK, history.Acquire, "k"))
	p := &holderProcess{r: r, key: "k"}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if got := a.called(); got != "hang unhang" {
		t.Errorf("process 1: %q, want hang unhang", got)
	}
	if got := b.called(); got != "hang kill" {
		t.Errorf("process 2: %q, want hang kill", got)
	}
	if held, _ := h.heldAtCrash(2, "k", time.Second); !held {
		t.Error("process 2 did not crash holding k")
	}
}

// Workers' events arrive out of time order: the holder of a key is the
// one of the latest grant by event time, whatever order they came in.
func TestHoldersTakeEventsInTimeOrder(t *testing.T) {
	at := func(proc int, typ history.Type, f string, ms int64) history.Event {
		e := ev(proc, typ, f, "k")
		e.T = ms * 1e6
		return e
	}
	for _, tt := range []struct {
		name   string
		events []history.Event // in arrival order
		holder int             // -1: nobody
	}{
		// Seen in a loaded matrix: process 1's grant at 1.658 s came
		// before process 0's grant at 1.645 s and its release at 1.655 s.
		{"an older grant and its release arrive after a newer grant", []history.Event{
			at(1, history.OK, history.Acquire, 1658), at(0, history.OK, history.Acquire, 1645),
			at(0, history.Invoke, history.Release, 1655)}, 1},
		{"in order", []history.Event{
			at(0, history.OK, history.Acquire, 1645), at(0, history.Invoke, history.Release, 1655),
			at(1, history.OK, history.Acquire, 1658)}, 1},
		{"a grant older than the last release arrives after it", []history.Event{
			at(1, history.OK, history.Acquire, 1658), at(1, history.Invoke, history.Release, 1670),
			at(0, history.OK, history.Acquire, 1645)}, -1},
		{"a newer grant after a release", []history.Event{
			at(1, history.OK, history.Acquire, 1658), at(1, history.Invoke, history.Release, 1670),
			at(0, history.OK, history.Acquire, 1675)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHolders()
			for _, e := range tt.events {
				h.see(e)
			}
			for _, p := range []int{0, 1} {
				if got := h.holds(p, "k"); got != (p == tt.holder) {
					t.Errorf("process %d holds: %v, want holder %d", p, got, tt.holder)
				}
			}
		})
	}
}

// A holder that re-enters its key stays its holder while it gives the
// re-entry back: a fault aimed at the holder finds it for the rest of its
// hold, not only until its first release.
func TestHoldersKeepAHolderThatGivesAReentryBack(t *testing.T) {
	reentry := func(e history.Event) history.Event { e.Reentry = true; return e }
	for _, tt := range []struct {
		name   string
		events []history.Event
		want   bool // process 1 holds k
	}{
		{"re-entered and given back", []history.Event{ev(1, history.OK, history.Acquire, "k"),
			reentry(ev(1, history.OK, history.Acquire, "k")), ev(1, history.Invoke, history.Release, "k")}, true},
		{"then released", []history.Event{ev(1, history.OK, history.Acquire, "k"),
			reentry(ev(1, history.OK, history.Acquire, "k")), ev(1, history.Invoke, history.Release, "k"),
			ev(1, history.Invoke, history.Release, "k")}, false},
		{"a re-entry not granted", []history.Event{ev(1, history.OK, history.Acquire, "k"),
			reentry(ev(1, history.Fail, history.Acquire, "k")), ev(1, history.Invoke, history.Release, "k")}, false},
		{"crashed after a re-entry, then granted afresh", []history.Event{ev(1, history.OK, history.Acquire, "k"),
			reentry(ev(1, history.OK, history.Acquire, "k")), ev(1, history.Info, history.Crash, ""),
			ev(1, history.OK, history.Acquire, "k"), ev(1, history.Invoke, history.Release, "k")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHolders()
			for i, e := range tt.events {
				e.T = int64(i + 1)
				h.see(e)
			}
			if got := h.holds(1, "k"); got != tt.want {
				t.Fatalf("holds = %v, want %v", got, tt.want)
			}
		})
	}
}

// `when:` steps wait for what they name: a holder, a holder that renewed
// since its grant, the next release asked (not a re-entry's); and tell how
// long ago it came about by the event's own time (a holder there before the
// step fell due: from then).
func TestWhenWaitsForItsCondition(t *testing.T) {
	reentry := func(e history.Event) history.Event { e.Reentry = true; return e }
	for _, tt := range []struct {
		name   string
		before []history.Event // seen before the wait starts
		after  []history.Event // seen while it waits
		when   chaos.When
		fires  bool
	}{
		{"holding", nil, []history.Event{ev(1, history.OK, history.Acquire, "k")}, chaos.When{Holding: "k"}, true},
		{"held before it fell due", []history.Event{ev(1, history.OK, history.Acquire, "k")}, nil, chaos.When{Holding: "k"}, true},
		{"renewed by its holder", []history.Event{ev(1, history.OK, history.Acquire, "k")},
			[]history.Event{ev(1, history.OK, history.Extend, "k")}, chaos.When{Renewed: "k"}, true},
		{"renewed before its grant does not count", []history.Event{ev(1, history.OK, history.Acquire, "k"), ev(1, history.OK, history.Extend, "k"),
			ev(1, history.Invoke, history.Release, "k")}, []history.Event{ev(2, history.OK, history.Acquire, "k")}, chaos.When{Renewed: "k"}, false},
		{"a renewal refused", []history.Event{ev(1, history.OK, history.Acquire, "k")},
			[]history.Event{ev(1, history.Fail, history.Extend, "k")}, chaos.When{Renewed: "k"}, false},
		{"the next release", []history.Event{ev(1, history.OK, history.Acquire, "k"), ev(1, history.Invoke, history.Release, "k"),
			ev(2, history.OK, history.Acquire, "k")}, []history.Event{ev(2, history.Invoke, history.Release, "k")}, chaos.When{Releasing: "k"}, true},
		{"a release before the wait does not count", []history.Event{ev(1, history.OK, history.Acquire, "k"),
			ev(1, history.Invoke, history.Release, "k")}, nil, chaos.When{Releasing: "k"}, false},
		{"a re-entry's release does not count", []history.Event{ev(1, history.OK, history.Acquire, "k")},
			[]history.Event{reentry(ev(1, history.OK, history.Acquire, "k")), ev(1, history.Invoke, history.Release, "k")}, chaos.When{Releasing: "k"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHolders()
			h.bind(1, 0)
			h.bind(2, 1)
			// The history's clock: the step falls due at 100; what comes
			// while it waits is seen at 100 + its place, and the wait
			// ends at 500.
			var clock atomic.Int64
			n, base := int64(0), int64(0)
			see := func(evs []history.Event) {
				for _, e := range evs {
					n++
					e.T = base + n
					h.see(e)
				}
			}
			see(tt.before)
			clock.Store(100)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			type waited struct {
				late time.Duration
				err  error
			}
			done, begun := make(chan waited, 1), make(chan struct{})
			w := holdingWaiter{holders: h, key: func(k string) string { return k }, now: clock.Load, begun: func() { close(begun) }}
			go func() { late, err := w.Wait(ctx, tt.when); done <- waited{late, err} }()
			<-begun
			if len(tt.after) > 0 {
				clock.Store(500)
			}
			base, n = 100, 0
			see(tt.after)
			got := <-done
			if (got.err == nil) != tt.fires {
				t.Fatalf("Wait(%s) = %v; want it to fire: %v", tt.when, got.err, tt.fires)
			}
			want := time.Duration(0) // came about as it fell due
			if len(tt.after) > 0 {
				want = time.Duration(500 - (100 + int64(len(tt.after)))) // the last event seen decided it
			}
			if tt.fires && got.late != want {
				t.Errorf("Wait(%s) told it came about %v ago, want %v", tt.when, got.late, want)
			}
		})
	}
}

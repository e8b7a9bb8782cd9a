package runner

import (
	"testing"
	"time"

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

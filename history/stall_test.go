package history

import (
	"encoding/json"
	"strings"
	"testing"
)

// A stall event reads back as it was made; others and broken ones do not.
func TestStallEventReadsBack(t *testing.T) {
	ev := StallEvent("worker 3", 1_000_000_000, 2_500_000_000)
	if ev.Proc != -1 || ev.Type != Info || ev.F != Stall || ev.T != 2_500_000_000 {
		t.Fatalf("stall event %+v", ev)
	}
	if !strings.Contains(string(ev.Value), `"ms":1500`) {
		t.Errorf("value %s does not say it lasted 1500 ms", ev.Value)
	}
	who, start, end, ok := ReadStall(ev)
	if !ok || who != "worker 3" || start != 1_000_000_000 || end != 2_500_000_000 {
		t.Errorf("ReadStall = %q %d %d %v", who, start, end, ok)
	}
	for w, want := range map[string]int{"worker 3": 3, "adapter 7": 7} {
		if p, ok := StallClient(w); !ok || p != want {
			t.Errorf("StallClient(%q) = %d, %v, want %d", w, p, ok, want)
		}
	}
	for _, w := range []string{"locklab", "containers", "worker", "worker x", "adapter", "server redis-0"} {
		if _, ok := StallClient(w); ok {
			t.Errorf("StallClient(%q) names a client", w)
		}
	}
	for _, bad := range []Event{
		{F: Nemesis, Value: ev.Value, T: ev.T},
		{F: Stall, Value: json.RawMessage(`"x"`), T: ev.T},
		{F: Stall, Value: ev.Value, T: 10}, // ends before it starts
	} {
		if _, _, _, ok := ReadStall(bad); ok {
			t.Errorf("ReadStall(%+v) read a stall", bad)
		}
	}
}

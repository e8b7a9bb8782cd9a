package verdict

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
)

// at is an event of process proc at t seconds.
func at(t float64, proc int, typ history.Type, f, key string) history.Event {
	return history.Event{Proc: proc, Type: typ, F: f, Key: key, T: int64(t * float64(time.Second))}
}

// fault is a nemesis start (taking effect) and, unless stop is negative,
// its stop.
func fault(id int64, start, stop float64) []history.Event {
	ev := func(t float64, op string) history.Event {
		b, _ := json.Marshal(history.NemesisValue{ID: id, Op: op, Fault: "partition"})
		return history.Event{Proc: -1, Type: history.OK, F: history.Nemesis, Value: b, T: int64(t * float64(time.Second))}
	}
	if stop < 0 {
		return []history.Event{ev(start, history.NemesisStart)}
	}
	return []history.Event{ev(start, history.NemesisStart), ev(stop, history.NemesisStop)}
}

// unreachable makes every refusal of evs an acquire that could not reach
// its servers.
func unreachable(evs []history.Event) []history.Event {
	for i := range evs {
		if evs[i].Type == history.Fail {
			evs[i].Error = "acquire k: " + impls.ErrUnavailable.Error() + ": connection refused"
		}
	}
	return evs
}

// stall is a server's stall from start to end seconds, as the runner
// records it.
func stall(start, end float64) []history.Event {
	b, _ := json.Marshal(history.StallValue{Who: "server redis-0", Start: int64(start * float64(time.Second))})
	return []history.Event{{Proc: -1, Type: history.Info, F: history.Stall, Value: b, T: int64(end * float64(time.Second))}}
}

// waiters are failed acquires of k by process 2 every half second in
// [from, to).
func waiters(from, to float64) []history.Event {
	var out []history.Event
	for t := from; t < to; t += 0.5 {
		out = append(out, at(t, 2, history.Invoke, history.Acquire, "k"), at(t+0.4, 2, history.Fail, history.Acquire, "k"))
	}
	return out
}

// lateReport is a fault's start that failed at t seconds: no target
// found, reported after the workload ended.
func lateReport(t float64) []history.Event {
	b, _ := json.Marshal(history.NemesisValue{ID: 9, Op: history.NemesisStart, Fault: "client-crash", Error: "no target matches now"})
	return []history.Event{{Proc: -1, Type: history.Fail, F: history.Nemesis, Value: b, T: int64(t * float64(time.Second))}}
}

func events(parts ...[]history.Event) []history.Event {
	var out []history.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	// Out of time order, as workers' events may arrive: reversed.
	slices.Reverse(out)
	return out
}

func TestStarvation(t *testing.T) {
	ttl := Freeing{After: time.Second, Scale: time.Second}
	never := Freeing{Never: true, Scale: time.Second}
	granted := []history.Event{at(0.1, 1, history.Invoke, history.Acquire, "k"), at(0.2, 1, history.OK, history.Acquire, "k")}
	released := []history.Event{at(0.9, 1, history.Invoke, history.Release, "k"), at(1, 1, history.OK, history.Release, "k")}
	lostRelease := []history.Event{at(0.9, 1, history.Invoke, history.Release, "k"), at(1, 1, history.Info, history.Release, "k")}
	tests := []struct {
		name   string
		f      Freeing
		events []history.Event
		want   string // a part of the proof; "" for none
	}{
		{"released, then nobody granted to the end", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 5)), "released it"},
		{"released, then granted again late", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 3),
			[]history.Event{at(3.5, 3, history.Invoke, history.Acquire, "k"), at(3.6, 3, history.OK, history.Acquire, "k")}, waiters(3.7, 5)), ""},
		{"holder gone, its TTL long past", ttl, events(granted, lostRelease, fault(1, 0.3, 0.5), waiters(1.2, 5)), "gone without a release 1s before"},
		{"holder gone, too little run left after its TTL", ttl, events(granted, lostRelease, fault(1, 0.3, 0.5), waiters(1.2, 2.5)), ""},
		{"a fault in force to the end", ttl, events(granted, released, fault(1, 0.3, -1), waiters(1.2, 5)), ""},
		{"the faults over late", ttl, events(granted, released, fault(1, 0.3, 4.5), waiters(1.2, 5)), ""},
		{"nothing expires it: gone is stuck", never, events(granted, lostRelease, fault(1, 0.3, 0.5), waiters(1.2, 3.5)), "nothing expires it"},
		{"nobody asked", ttl, events(granted, released, fault(1, 0.3, 0.5), []history.Event{at(5, 3, history.OK, history.Extend, "j")}), ""},
		{"one waiter waiting to the end", ttl, events(granted, released, fault(1, 0.3, 0.5),
			[]history.Event{at(1.5, 2, history.Invoke, history.Acquire, "k"), at(5, 3, history.OK, history.Extend, "j")}), "released it"},
		{"never granted", ttl, events(fault(1, 0.3, 0.5), waiters(1.2, 5)), ""},
		{"clients that cannot reach their servers: unavailable, not blocked", ttl, events(granted, released, fault(1, 0.3, 0.5), unreachable(waiters(1.2, 5))), ""},
		{"a server stood still late in the run", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 5), stall(1.5, 4.6)), ""},
		{"a server stood still early in the run", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 5), stall(1.0, 2.0)), "released it"},
		{"a client killed mid-acquire: its acquire may have taken the key", ttl, events(granted, released, fault(1, 0.3, 2.1), waiters(1.2, 3.2),
			[]history.Event{at(2, 5, history.Invoke, history.Acquire, "k")}), ""},
		{"a client killed mid-acquire while the servers were down: its session counts from their return", ttl, events(granted, released, fault(1, 0.3, 3.0), waiters(1.2, 4.4),
			[]history.Event{at(1.1, 5, history.Invoke, history.Acquire, "k")}), ""},
		{"a client killed mid-acquire long before", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 5),
			[]history.Event{at(1.1, 5, history.Invoke, history.Acquire, "k")}), "released it"},
		{"a waiter retired: its queue node may stand until it is freed", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 3),
			[]history.Event{at(1.1, 4, history.Invoke, history.Acquire, "k"), at(1.4, 4, history.Info, history.Acquire, "k")}), ""},
		{"a waiter retired once the key should have been granted: no excuse", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 5),
			[]history.Event{at(1.5, 4, history.Invoke, history.Acquire, "k"), at(3.5, 4, history.Info, history.Acquire, "k")}), "released it"},
		{"a waiter killed while it waited is not waiting", ttl, events(granted, released, fault(1, 0.3, 0.5),
			[]history.Event{at(0.15, 4, history.Invoke, history.Acquire, "k"), at(0.6, 4, history.Info, "crash", ""), at(5, 3, history.OK, history.Extend, "j")}), ""},
		{"a fault's report after the clients' last event does not lengthen the run", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 1.6),
			lateReport(5)), ""},
		{"a waiter retired early", ttl, events(granted, released, fault(1, 0.3, 0.5), waiters(1.2, 5),
			[]history.Event{at(0.3, 4, history.Invoke, history.Acquire, "k"), at(0.6, 4, history.Info, history.Acquire, "k")}), "released it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Starvation
			for _, ev := range tt.events {
				s.Add(ev)
			}
			proof, ok := s.Starved(tt.f)
			switch {
			case tt.want == "" && ok:
				t.Fatalf("starved: %s; want not", proof)
			case tt.want != "" && !ok:
				t.Fatalf("not starved; want %q", tt.want)
			case tt.want != "" && !strings.Contains(proof, tt.want):
				t.Fatalf("proof %q; want it to say %q", proof, tt.want)
			}
			t.Log(proof)
		})
	}
}

func TestFreeingOf(t *testing.T) {
	tests := []struct {
		name  string
		caps  impls.Capabilities
		ttl   time.Duration
		crash time.Duration
		want  Freeing
	}{
		{"a TTL the workload asks", impls.Capabilities{TTL: true}, 2 * time.Second, 0, Freeing{After: 2 * time.Second, Scale: 2 * time.Second}},
		{"the approach's default TTL", impls.Capabilities{TTL: true}, 0, 0, Freeing{After: unknownTTL, Scale: time.Second}},
		{"a session", impls.Capabilities{}, 0, 2 * time.Second, Freeing{After: 2 * time.Second, Scale: 2 * time.Second}},
		{"a dropped connection", impls.Capabilities{FreedOnDisconnect: true}, 0, 0, Freeing{Scale: time.Second}},
		{"nothing", impls.Capabilities{}, time.Second, 0, Freeing{Never: true, Scale: time.Second}},
	}
	for _, tt := range tests {
		a := impls.Approach{Name: "a", Caps: tt.caps, CrashFreedAfter: tt.crash}
		if got := FreeingOf(a, tt.ttl); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

package history

import (
	"encoding/json"
	"testing"
)

func nem(t int64, typ Type, v any) Event {
	b, _ := json.Marshal(v)
	return Event{Proc: -1, Type: typ, F: Nemesis, Value: b, T: t}
}

func TestFaultWindowsPairsOverlappingInjectionsByID(t *testing.T) {
	evs := []Event{
		nem(10, Invoke, NemesisValue{ID: 1, Op: "start", Fault: "client-pause", Selector: "{client: holder}"}),
		nem(11, OK, NemesisValue{ID: 1, Op: "start", Fault: "client-pause", Target: "client 4"}),
		nem(20, Invoke, NemesisValue{ID: 2, Op: "start", Fault: "partition", Target: "redis-0"}),
		nem(21, OK, NemesisValue{ID: 2, Op: "start", Fault: "partition", Target: "redis-0"}),
		{Proc: 1, Type: Invoke, F: Acquire, Key: "k", T: 25},
		nem(30, OK, NemesisValue{ID: 1, Op: "stop", Fault: "client-pause", Target: "client 4"}),
		nem(40, Invoke, NemesisValue{ID: 3, Op: "start", Fault: "server-kill", Selector: "{node: one}"}),
		nem(41, Fail, NemesisValue{ID: 3, Op: "start", Fault: "server-kill", Error: "boom"}),
	}
	ws := FaultWindows(evs)
	if len(ws) != 2 { // the failed injection opened none
		t.Fatalf("windows = %+v", ws)
	}
	if ws[0].ID != 1 || ws[0].Start != 10 || ws[0].InPlace != 11 || ws[0].End != 30 || ws[0].Target != "client 4" {
		t.Errorf("first window %+v", ws[0])
	}
	if ws[1].ID != 2 || ws[1].Start != 20 || ws[1].End != 0 {
		t.Errorf("the partition was never healed: %+v", ws[1])
	}
}

func TestFaultWindowsReadsJepsenNemesisOps(t *testing.T) {
	evs := []Event{
		nem(1, Info, "start-partition"),
		nem(2, Info, map[string]string{"f": "start-partition"}), // its completion: no second window
		nem(4, Info, "stop-partition"),
		nem(5, Info, "stop-partition"), // the heal's completion: the window ends here
		nem(6, Info, "start"),
		nem(9, Info, "stop"),
		nem(10, Info, "kill"), // neither start nor stop
	}
	ws := FaultWindows(evs)
	if len(ws) != 2 || ws[0].Fault != "partition" || ws[0].Start != 1 || ws[0].End != 5 || ws[1].Start != 6 || ws[1].End != 9 {
		t.Fatalf("windows = %+v", ws)
	}
}

// A fault over once made says so on its stop, and its window carries it.
func TestFaultWindowOfAnInstantFault(t *testing.T) {
	ws := FaultWindows([]Event{
		nem(10, OK, NemesisValue{ID: 1, Op: "start", Fault: "client-crash", Target: "client 2", When: "holding 0"}),
		nem(10, OK, NemesisValue{ID: 1, Op: "stop", Fault: "client-crash", Target: "client 2", Instant: true}),
		nem(20, OK, NemesisValue{ID: 2, Op: "start", Fault: "client-pause", Target: "client 1"}),
		nem(90, OK, NemesisValue{ID: 2, Op: "stop", Fault: "client-pause", Target: "client 1"}),
	})
	if len(ws) != 2 || !ws[0].Instant || ws[1].Instant || !ws[0].AtGrant || ws[1].AtGrant {
		t.Fatalf("windows = %+v, want the crash instant and at a grant, the pause neither", ws)
	}
}

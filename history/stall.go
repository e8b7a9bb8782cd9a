package history

import (
	"encoding/json"
	"fmt"
	"time"
)

// Stall is the event of the lab's stall monitor: a probe (in locklab, in
// a worker process, in a container beside the servers) woke much later
// than it asked to, so whatever runs beside it stood still from Start to
// the event's t. It is the lab's own news, not an operation: process -1,
// type info, recorded when the probe woke.
//
//	{"proc":-1,"type":"info","f":"stall","value":{"who":"worker 3","start":496798432265,"ms":1503.2},"t":496799935465}
const Stall = "stall"

// StallValue is the value of a stall event.
type StallValue struct {
	// Who stood still: "locklab", "worker N" (the worker process running
	// client N), "containers" (the probe beside the server containers).
	Who string `json:"who"`
	// Start is when the probe was last seen running (CLOCK_MONOTONIC ns);
	// the stall ends at the event's t.
	Start int64 `json:"start"`
	// Ms is how long it lasted (t - start), for people reading the file.
	Ms float64 `json:"ms"`
}

// StallEvent is the event of who's stall from start to end.
func StallEvent(who string, start, end int64) Event {
	b, _ := json.Marshal(StallValue{Who: who, Start: start, Ms: float64(end-start) / float64(time.Millisecond)})
	return Event{Proc: -1, Type: Info, F: Stall, Value: b, T: end}
}

// StallClient is the client whose own process stalled, when who names
// one: its worker ("worker 3": 3) or its adapter ("adapter 3").
func StallClient(who string) (proc int, ok bool) {
	for _, format := range []string{"worker %d", "adapter %d"} {
		if n, err := fmt.Sscanf(who, format, &proc); err == nil && n == 1 {
			return proc, true
		}
	}
	return 0, false
}

// ReadStall reads a stall event back: who stalled, from when to when.
func ReadStall(ev Event) (who string, start, end int64, ok bool) {
	if ev.F != Stall {
		return "", 0, 0, false
	}
	var v StallValue
	if json.Unmarshal(ev.Value, &v) != nil || v.Start > ev.T {
		return "", 0, 0, false
	}
	return v.Who, v.Start, ev.T, true
}

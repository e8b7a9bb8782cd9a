package history

import (
	"encoding/json"
	"sort"
	"strings"
)

// NemesisValue is the value of a locklab nemesis event, as the chaos
// engine emits it. Every injection is a start invoke followed by a start ok
// (injected) or fail (nothing was injected: no target, not available, the
// injection failed and rolled back); an injected fault ends with a stop ok
// (healed) or info (the heal failed: the fault may still be in place). An
// instantaneous fault (a crash) has its stop right after its start. Events
// of one injection share its id, so windows of overlapping faults pair
// exactly.
//
//	{"proc":-1,"type":"invoke","f":"nemesis","value":{"id":3,"op":"start","fault":"client-pause","target":"client 4"}}
type NemesisValue struct {
	ID       int64             `json:"id"`
	Op       string            `json:"op"` // NemesisStart, NemesisStop
	Fault    string            `json:"fault"`
	Target   string            `json:"target,omitempty"`   // what it acted on (in the ok)
	Selector string            `json:"selector,omitempty"` // the step's target as written
	Params   map[string]string `json:"params,omitempty"`
	Threat   string            `json:"threat,omitempty"` // what it does to a lock holder ("holder-pause")
	For      string            `json:"for,omitempty"`    // its planned length ("2s"); empty: until the end
	Error    string            `json:"error,omitempty"`
	// Instant (on a stop) says the fault was over once made: nothing to
	// heal (a crash, a restart done in one step).
	Instant bool `json:"instant,omitempty"`
	// When is what the fault waited for before it struck ("holding 0":
	// the next grant of key 0); empty: a time.
	When string `json:"when,omitempty"`
}

// The ops of a nemesis event.
const (
	NemesisStart = "start"
	NemesisStop  = "stop"
)

// Window is a span of time in which a fault was in force.
type Window struct {
	ID     int64  // locklab's injection id; 0 for Jepsen histories
	Fault  string // "client-pause", or Jepsen's :f suffix ("partition")
	Target string
	Start  int64 // CLOCK_MONOTONIC ns (or the history's own time scale)
	End    int64 // 0: never healed within the history
	// InPlace is when the injection was in place (its start's ok; 0:
	// not recorded): a user's fault command may take seconds.
	InPlace int64
	// Instant: the fault was over once made (NemesisValue.Instant).
	Instant bool
	// AtGrant: it struck at a grant (NemesisValue.When), aimed at a hold.
	AtGrant bool
	// Params are the fault's options as its start recorded them (nil for
	// Jepsen histories).
	Params map[string]string
}

// FaultWindows pairs the nemesis events of a history into windows, in
// start order. It reads locklab's events (paired by id, so windows may
// overlap) and Jepsen's (":f :start-partition" ... ":f :stop-partition",
// or plain :start/:stop, paired by name in order). Events it cannot read
// are skipped: windows are for showing, not judging.
func FaultWindows(events []Event) []Window {
	var out []Window
	byID := map[int64]int{}
	openByName := map[string]int{}
	closedByName := map[string]int{}
	for _, ev := range events {
		if ev.F != Nemesis {
			continue
		}
		var v NemesisValue
		if json.Unmarshal(ev.Value, &v) == nil && v.Op != "" {
			switch v.Op {
			case NemesisStart:
				i, seen := byID[v.ID]
				switch {
				case ev.Type == Fail || v.Error != "":
					if seen { // the injection failed: no window after all
						out[i].Fault = ""
					}
				case !seen:
					i = len(out)
					byID[v.ID] = i
					out = append(out, Window{ID: v.ID, Fault: v.Fault, Target: v.Target, Start: ev.T, AtGrant: v.When != "" && !strings.HasPrefix(v.When, "releasing"), Params: v.Params})
					fallthrough
				default:
					if v.Target != "" {
						out[i].Target = v.Target // the ok names what the selector resolved to
					}
					if ev.Type == OK {
						out[i].InPlace = ev.T
					}
				}
			case NemesisStop:
				if i, ok := byID[v.ID]; ok && ev.Type != Invoke {
					out[i].End, out[i].Instant = ev.T, v.Instant
				}
			}
			continue
		}
		name, start, ok := jepsenNemesisOp(ev.Value)
		if !ok {
			continue
		}
		// Jepsen records a nemesis op twice (invocation and completion,
		// both often :info): a start opens a window unless one of that
		// name is open; a stop ends it, and the stop's completion moves
		// the end to when the heal was done.
		if start {
			if _, open := openByName[name]; !open {
				openByName[name] = len(out)
				delete(closedByName, name)
				label := name
				if label == "" {
					label = "nemesis"
				}
				out = append(out, Window{Fault: label, Start: ev.T})
			}
			continue
		}
		if i, open := openByName[name]; open {
			out[i].End = ev.T
			delete(openByName, name)
			closedByName[name] = i
		} else if i, closing := closedByName[name]; closing {
			out[i].End = ev.T
			delete(closedByName, name)
		}
	}
	kept := out[:0]
	for _, w := range out {
		if w.Fault != "" {
			kept = append(kept, w)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].Start < kept[j].Start })
	return kept
}

// jepsenNemesisOp reads a Jepsen nemesis op's :f, as the importers store it
// (the value is the op's :f string, or a map with "f"): "start-partition"
// is (partition, start), "stop" is ("", stop).
func jepsenNemesisOp(value json.RawMessage) (name string, start, ok bool) {
	var f string
	if json.Unmarshal(value, &f) != nil {
		var m struct {
			F string `json:"f"`
		}
		if json.Unmarshal(value, &m) != nil || m.F == "" {
			return "", false, false
		}
		f = m.F
	}
	switch {
	case strings.HasPrefix(f, "start"):
		return strings.TrimLeft(strings.TrimPrefix(f, "start"), "-_"), true, true
	case strings.HasPrefix(f, "stop"):
		return strings.TrimLeft(strings.TrimPrefix(f, "stop"), "-_"), false, true
	}
	return "", false, false
}

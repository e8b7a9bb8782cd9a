package runner

import (
	"slices"
	"testing"

	"github.com/locklab/locklab/history"
)

// fakeClock is a clock a test sets.
type fakeClock struct{ t int64 }

func (c *fakeClock) Nanos() int64 { return c.t }

// A case asked its question when each of its fault steps had an injection
// that ran its planned length, was instantaneous, or was planned until the
// end; not when every injection of a step failed or was cut short by the
// end of the case.
func TestNemesisAsked(t *testing.T) {
	const s = int64(1e9)
	type ev struct {
		at  int64
		typ history.Type
		v   history.NemesisValue
	}
	start := func(id int64, at int64, dur string) []ev {
		v := history.NemesisValue{ID: id, Op: history.NemesisStart, Fault: "client-pause", For: dur}
		return []ev{{at, history.Invoke, v}, {at, history.OK, v}}
	}
	stop := func(id, at int64, instant bool) ev {
		return ev{at, history.OK, history.NemesisValue{ID: id, Op: history.NemesisStop, Fault: "client-pause", Instant: instant}}
	}
	failed := func(id, at int64) []ev {
		v := history.NemesisValue{ID: id, Op: history.NemesisStart, Fault: "client-pause", For: "3s", Error: "nobody held k0 within 2s"}
		return []ev{{at, history.Invoke, v}, {at, history.Fail, v}}
	}
	// other moves events to a second step: a restart beside the pauses.
	other := func(evs []ev) []ev {
		out := slices.Clone(evs)
		for i := range out {
			out[i].v.Fault, out[i].v.Selector = "server-restart", "{node: redis-2}"
		}
		return out
	}
	cat := func(parts ...any) []ev {
		var out []ev
		for _, p := range parts {
			switch x := p.(type) {
			case ev:
				out = append(out, x)
			case []ev:
				out = append(out, x...)
			}
		}
		return out
	}
	for _, tt := range []struct {
		name string
		evs  []ev
		want bool
		last int64 // when the last step to take effect first did
	}{
		{"ran its length", cat(start(1, 1*s, "3s"), stop(1, 4*s, false)), true, 1 * s},
		{"cut short by the end", cat(start(1, 5*s, "3s"), stop(1, 6*s, false)), false, 5 * s},
		{"failed", failed(1, 3*s), false, 0},
		{"failed, then cut short", cat(failed(1, 3*s), start(2, 5*s, "3s"), stop(2, 6*s, false)), false, 5 * s},
		{"failed, then ran", cat(failed(1, 3*s), start(2, 3*s, "1s"), stop(2, 4*s, false)), true, 3 * s},
		{"one step ran, another failed", cat(start(1, s, ""), other(failed(2, 3*s)), stop(1, 9*s, false)), false, s},
		{"two steps ran", cat(start(1, s, ""), other(start(2, 3*s, "")), stop(1, 9*s, false), other([]ev{stop(2, 3*s, true)})), true, 3 * s},
		// The stage set by the first step, the question asked by the second:
		// a later injection of the first is not the question.
		{"a step's later injections", cat(start(1, s, "1s"), stop(1, 2*s, false), other(start(2, 3*s, "")), other([]ev{stop(2, 3*s, true)}),
			start(3, 5*s, "1s"), stop(3, 6*s, false)), true, 3 * s},
		{"one step in force, another failed", cat(start(1, s, ""), other(failed(2, 3*s))), false, s},
		{"instantaneous", cat(start(1, 1*s, ""), stop(1, 1*s, true)), true, 1 * s},
		{"until the end", cat(start(1, 1*s, ""), stop(1, 2*s, false)), true, 1 * s},
		{"nothing", nil, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{}
			n := &nemesisRecorder{rec: history.Discard{}, clk: clk}
			for _, e := range tt.evs {
				clk.t = e.at
				n.Nemesis(e.typ, e.v)
			}
			if got := n.asked(); got != tt.want {
				t.Errorf("asked = %v, want %v", got, tt.want)
			}
			if got := n.lastStepFirst(); got != tt.last {
				t.Errorf("lastStepFirst = %v, want %v", got, tt.last)
			}
		})
	}
}

package checker

import (
	"encoding/json"
	"testing"

	"github.com/locklab/locklab/history"
)

// How long the lab must have stood still to have made a double grant: the
// first holder's end past the second grant, however short the second
// holder's tenure.
func TestDoubleGrantWindowNeed(t *testing.T) {
	const ms = int64(1e6)
	iv := func(start, end, validUntil int64) Interval {
		return Interval{Start: start * ms, End: end * ms, ValidUntil: validUntil * ms}
	}
	asked := func(i Interval, at int64) Interval { i.Asked = at * ms; return i }
	for _, tt := range []struct {
		name string
		d    DoubleGrant
		need int64 // ms
	}{
		{"outlived, a short second tenure inside a 3 s pause",
			DoubleGrant{Kind: OutlivedLease, Held: iv(1000, 4100, 2000), Second: iv(2050, 2090, 3050)}, 2050},
		{"outlived, the second holds on past the first",
			DoubleGrant{Kind: OutlivedLease, Held: iv(1000, 2300, 2000), Second: iv(2050, 2600, 3050)}, 250},
		{"both valid, the first's belief past the second grant",
			DoubleGrant{Kind: BothValid, Held: iv(1000, 1500, 2000), Second: iv(1200, 1240, 2200)}, 800},
		{"outlived, its lease counted from its request 0.8 s before the grant",
			DoubleGrant{Kind: OutlivedLease, Held: asked(iv(1000, 2300, 2000), 200), Second: iv(2050, 2600, 3050)}, 250},
		{"never released: no bound",
			DoubleGrant{Kind: NeverReleased, Held: Interval{Start: 1000 * ms, End: Open}, Second: iv(1200, 1240, 0)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.d.window()
			if w.Need != tt.need*ms {
				t.Errorf("need %v ms, want %v ms", w.Need/ms, tt.need)
			}
			from := tt.d.Held.Start
			if tt.d.Held.Asked != 0 && tt.d.Kind == OutlivedLease {
				from = tt.d.Held.Asked
			}
			if w.From != from && tt.d.Kind != BothValid {
				t.Errorf("from %d, want the first holder's request or, unknown, its grant %d", w.From, from)
			}
		})
	}
}

// How late a lost update's write came: behind the first write that replaced
// the balance it read, however many writes followed that one.
func TestLostUpdateWindowNeed(t *testing.T) {
	const ms = int64(1e6)
	write := func(proc int, at, read, balance int64) history.Event {
		v, _ := json.Marshal(map[string]int64{"read": read, "balance": balance})
		return history.Event{Proc: proc, Type: history.OK, F: history.Write, Key: "k", T: at * ms, Value: v}
	}
	for _, tt := range []struct {
		name   string
		writes []history.Event
		need   int64 // ms; 0: no window
	}{
		{"the last write replaced what was read",
			[]history.Event{write(0, 1000, 0, 10), write(1, 1300, 0, 20)}, 300},
		{"three writes since the one that replaced it",
			[]history.Event{write(0, 1000, 0, 10), write(0, 1100, 10, 11), write(0, 1200, 11, 12), write(0, 1250, 12, 13), write(1, 1400, 10, 20)}, 300},
		{"read older than every write remembered: the oldest's distance",
			append(func() []history.Event {
				var w []history.Event
				for i := int64(0); i < keepWritten+5; i++ {
					w = append(w, write(0, 1000+10*i, i, i+1))
				}
				return w
			}(), write(1, 2000, 0, 99)), 2000 - (1000 + 10*5)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewResources()
			for i, ev := range tt.writes {
				ev.Index = int64(i)
				r.Add(ev)
			}
			vs := r.found(sweep{})
			if len(vs) != 1 || vs[0].Kind != LostUpdate || vs[0].Window == nil {
				t.Fatalf("violations %+v, want one lost update with a window", vs)
			}
			if got := vs[0].Window.Need / ms; got != tt.need {
				t.Errorf("need %d ms, want %d ms", got, tt.need)
			}
		})
	}
}

// The window of an outlived lease reaches back to the holder's request,
// read from the history: the acquire's invoke, not an earlier one of the
// same client's.
func TestOutlivedWindowFromTheRequest(t *testing.T) {
	const ms = int64(1e6)
	inv, ok := history.Invoke, history.OK
	lease := func(e history.Event, until int64) history.Event { e.ValidUntil = until * ms; return e }
	evs := []history.Event{
		ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10*ms), ev(1, inv, R, "k", 20*ms), ev(1, ok, R, "k", 25*ms),
		ev(1, inv, A, "k", 100*ms), lease(ev(1, ok, A, "k", 1500*ms), 1100),
		ev(2, inv, A, "k", 200*ms), lease(ev(2, ok, A, "k", 1600*ms), 2600),
		ev(1, inv, R, "k", 1900*ms), ev(2, inv, R, "k", 2000*ms),
	}
	gs := run(evs)
	if len(gs) != 1 || gs[0].Kind != OutlivedLease {
		t.Fatalf("double grants %+v, want one outlived", gs)
	}
	w := gs[0].window()
	if w.From != 100*ms || w.Need != 300*ms {
		t.Errorf("window from %d ms needing %d ms, want from the request at 100 ms, needing 300 ms", w.From/ms, w.Need/ms)
	}
}

package verdict

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

// ms is a time on a hand-built history's clock.
func ms(n int64) int64 { return n * int64(time.Millisecond) }

// A history built by hand, event by event.
type hist []history.Event

func (h *hist) add(proc int, typ history.Type, f string, t int64) *history.Event {
	*h = append(*h, history.Event{Index: int64(len(*h)), Proc: proc, Type: typ, F: f, Key: "k", T: t})
	return &(*h)[len(*h)-1]
}

// hold records proc taking the lock at from and releasing it at to, its
// lease ending validFor after the grant.
func (h *hist) hold(proc int, from, to, validFor int64) {
	h.add(proc, history.Invoke, history.Acquire, from-ms(1))
	h.add(proc, history.OK, history.Acquire, from).ValidUntil = from + validFor
	h.add(proc, history.Invoke, history.Release, to)
	h.add(proc, history.OK, history.Release, to+ms(1))
}

func (h *hist) stall(who string, from, to int64) {
	ev := history.StallEvent(who, from, to)
	ev.Index = int64(len(*h))
	*h = append(*h, ev)
}

func (h *hist) fault(id int64, from, to int64) {
	for _, x := range []struct {
		op string
		t  int64
	}{{history.NemesisStart, from}, {history.NemesisStop, to}} {
		b, _ := json.Marshal(history.NemesisValue{ID: id, Op: x.op, Fault: "server-pause", Target: "redis-1"})
		*h = append(*h, history.Event{Index: int64(len(*h)), Proc: -1, Type: history.OK, F: history.Nemesis, Value: b, T: x.t})
	}
}

// judge is what the runner does with a case's history: check it, compare
// what it showed with e, then judge again knowing when the lab stalled.
func judge(t *testing.T, h hist, e Expectation) Result {
	t.Helper()
	c := checker.New(checker.ModelLease, true)
	run := Span{Start: h[0].T, End: h[0].T}
	var stalls []Stall
	for _, ev := range h {
		c.Add(ev)
		run.Start, run.End = min(run.Start, ev.T), max(run.End, ev.T)
		if who, from, to, ok := history.ReadStall(ev); ok {
			proc, worker := history.StallClient(who)
			if !worker {
				proc = -1
			}
			stalls = append(stalls, Stall{Who: who, Proc: proc, Span: Span{from, to}})
		}
	}
	v, err := c.Verdict(context.Background(), checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := Decisive{Run: run, Violations: ViolationSpans(v, func(i int64) (int64, int, bool) {
		if i < 0 || i >= int64(len(h)) {
			return 0, 0, false
		}
		return h[i].T, h[i].Proc, true
	}, run)}
	for _, w := range history.FaultWindows(h) {
		d.Faults = append(d.Faults, Span{w.Start, w.End})
	}
	r := Compare(e, Observe(v, true, Liveness{}))
	return LabStalled(r, e, d, stalls)
}

func TestLabStalledDuringTheDecidingEvents(t *testing.T) {
	// Client 0 holds from 1.0 s to 2.5 s on a 0.5 s lease; client 1 is
	// granted at 2.0 s: a double grant (holder outlived its lease) whose
	// events run from 1.0 s to 2.0 s.
	doubleGrant := func() hist {
		var h hist
		h.hold(0, ms(1000), ms(2500), ms(500))
		h.hold(1, ms(2000), ms(3000), ms(500))
		return h
	}
	clean := func() hist {
		var h hist
		h.hold(0, ms(1000), ms(1500), ms(500))
		h.hold(1, ms(2000), ms(3000), ms(500))
		return h
	}
	with := func(h hist, more func(*hist)) hist { more(&h); return h }
	safe := Expect("test", Safe)
	outlived := Expect("test", DoubleGrantOutlived)
	tests := []struct {
		name    string
		h       hist
		e       Expectation
		want    Status
		stalled bool
	}{
		{"unexpected violation inside a stall: inconclusive",
			with(doubleGrant(), func(h *hist) { h.stall("locklab", ms(1100), ms(2200)) }), safe, Undecided, true},
		{"unexpected violation outside every stall: the lock's",
			with(doubleGrant(), func(h *hist) { h.stall("locklab", ms(3500), ms(4000)) }), safe, Contradicts, false},
		{"one violation clear of the stall is enough",
			with(doubleGrant(), func(h *hist) {
				h.hold(2, ms(5000), ms(6000), ms(500))
				h.hold(3, ms(5700), ms(6500), ms(500))
				h.stall("locklab", ms(1100), ms(2200))
			}), safe, Contradicts, false},
		{"a stall of the worker of a client in the violation: inconclusive",
			with(doubleGrant(), func(h *hist) { h.stall("worker 0", ms(1100), ms(2200)) }), safe, Undecided, true},
		{"a stall of another client's worker cannot have made it",
			with(doubleGrant(), func(h *hist) { h.stall("worker 7", ms(1100), ms(2200)) }), safe, Contradicts, false},
		{"expected violation shown only inside a stall: inconclusive",
			with(doubleGrant(), func(h *hist) { h.stall("worker 0", ms(1200), ms(1900)) }), outlived, Undecided, true},
		{"expected violation shown outside the stall",
			with(doubleGrant(), func(h *hist) { h.stall("containers", ms(3500), ms(4000)) }), outlived, Agrees, false},
		{"expected safe, the lab still for half the fault window: inconclusive",
			with(clean(), func(h *hist) {
				h.fault(1, ms(1200), ms(2200))
				h.stall("containers", ms(1300), ms(1600))
				h.stall("locklab", ms(1500), ms(1750))  // 0.45 s together, counted once
				h.stall("worker 1", ms(2000), ms(2400)) // 0.2 s of it in the window
			}), safe, Undecided, true},
		{"expected safe, the lab still for less than half the fault window: decided",
			with(clean(), func(h *hist) {
				h.fault(1, ms(1200), ms(2200))
				h.stall("containers", ms(1300), ms(1600))
				h.stall("locklab", ms(1300), ms(1600)) // the same 0.3 s twice counts once
				h.stall("worker 1", ms(2050), ms(2400))
			}), safe, Agrees, false},
		{"expected safe, one short window stalled whole, the other clear: decided",
			with(clean(), func(h *hist) {
				h.fault(1, ms(1200), ms(2200))
				h.fault(2, ms(2700), ms(2750)) // cut short by the case's end
				h.stall("containers", ms(2650), ms(2900))
			}), safe, Agrees, false},
		{"expected safe, two windows stalled for half their time together: inconclusive",
			with(clean(), func(h *hist) {
				h.fault(1, ms(1200), ms(1600))
				h.fault(2, ms(2200), ms(2600))
				h.stall("locklab", ms(1200), ms(1400))
				h.stall("locklab", ms(2300), ms(2500))
			}), safe, Undecided, true},
		{"expected safe, the stall outside the fault window",
			with(clean(), func(h *hist) { h.fault(1, ms(1200), ms(1600)); h.stall("locklab", ms(2500), ms(2800)) }), safe, Agrees, false},
		{"expected safe, no fault: a stall decides nothing",
			with(clean(), func(h *hist) { h.stall("locklab", ms(1100), ms(2600)) }), safe, Agrees, false},
		{"expected violation missed in a stalled fault window: inconclusive, not missed",
			with(clean(), func(h *hist) { h.fault(1, ms(1200), ms(2200)); h.stall("locklab", ms(1300), ms(2100)) }), outlived, Undecided, true},
		{"expected violation missed, the lab ran through the fault",
			with(clean(), func(h *hist) { h.fault(1, ms(1200), ms(1600)); h.stall("locklab", ms(2500), ms(2800)) }), outlived, Contradicts, false},
		{"no stall at all",
			doubleGrant(), safe, Contradicts, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := judge(t, tt.h, tt.e)
			if r.Status != tt.want || r.LabStalled != tt.stalled {
				t.Fatalf("status %q, lab stalled %v (%s); want %q, %v", r.Status, r.LabStalled, r.Text, tt.want, tt.stalled)
			}
			if tt.stalled {
				if !strings.HasPrefix(r.Text, "inconclusive: the lab stalled (") || r.Missed {
					t.Errorf("text %q (missed %v): want it to say the lab stalled, and not count as a miss", r.Text, r.Missed)
				}
			}
		})
	}
}

// What an inconclusive run saw stays reported, and who stalled, for how
// long and when are named.
func TestLabStalledKeepsWhatItSaw(t *testing.T) {
	var h hist
	h.hold(0, ms(1000), ms(2500), ms(500))
	h.hold(1, ms(2000), ms(3000), ms(500))
	h.stall("worker 1", ms(1100), ms(2600))
	r := judge(t, h, Expect("test", Safe))
	if len(r.Observed) != 1 || r.Observed[0] != DoubleGrantOutlived {
		t.Errorf("observed %v, want the double grant still reported", r.Observed)
	}
	if want := "worker 1 for 1.50 s at 0.10 s"; !strings.Contains(r.Text, want) {
		t.Errorf("text %q does not say %q", r.Text, want)
	}
	if !strings.Contains(r.Text, "expected safe, observed double-grant:outlived") {
		t.Errorf("text %q lost the comparison", r.Text)
	}
}

// A gate never passes an inconclusive run, and never fails the lock for
// it: repeated runs count it undecided.
func TestTallyCountsLabStalledUndecided(t *testing.T) {
	var h hist
	h.hold(0, ms(1000), ms(2500), ms(500))
	h.hold(1, ms(2000), ms(3000), ms(500))
	h.stall("locklab", ms(1100), ms(2200))
	r := judge(t, h, Expect("test", Safe))
	var tl Tally
	tl.Add(r)
	if tl.Undecided != 1 || tl.Contradicted != 0 || tl.Agreed != 0 {
		t.Fatalf("tally %+v, want one undecided run", tl)
	}
	if st := tl.Status(Policy{}); st != Undecided {
		t.Fatalf("status %q, want undecided", st)
	}
}

// write records proc writing the counter at t: balance from a read of read,
// with a fencing token when token > 0.
func (h *hist) write(proc int, t int64, read, balance int64, token uint64) {
	b, _ := json.Marshal(map[string]int64{"read": read, "balance": balance})
	ev := h.add(proc, history.OK, history.Write, t)
	ev.Value = b
	if token > 0 {
		ev.Token = &token
	}
}

// A stall makes a verdict undecided only when it was long enough to
// account for what was seen: each bound from both sides.
func TestAStallMustAccountForWhatWasSeen(t *testing.T) {
	// Client 0 holds from 1.0 s to 2.5 s on a 0.5 s lease; client 1 is
	// granted at 2.0 s: client 0 went on 0.5 s past the second grant.
	outlived := func(more func(*hist)) hist {
		var h hist
		h.hold(0, ms(1000), ms(2500), ms(500))
		h.hold(1, ms(2000), ms(3000), ms(500))
		more(&h)
		return h
	}
	// Client 0 believes its lease runs to 2.0 s; client 1 is granted at
	// 1.4 s, believing to 2.4 s: the beliefs overlap by 0.6 s.
	bothValid := func(more func(*hist)) hist {
		var h hist
		h.hold(0, ms(1000), ms(1500), ms(1000))
		h.hold(1, ms(1400), ms(1900), ms(1000))
		more(&h)
		return h
	}
	// Client 1 writes at 1.0 s; client 0's write at 1.3 s builds on the
	// read before it: a lost update, 0.3 s behind the write it lost.
	lost := func(more func(*hist)) hist {
		var h hist
		h.write(1, ms(1000), 0, 1, 0)
		h.write(0, ms(1300), 0, 1, 0)
		more(&h)
		return h
	}
	// A write with token 7 at 1.0 s, one with token 5 at 1.4 s: stale,
	// 0.4 s behind.
	stale := func(more func(*hist)) hist {
		var h hist
		h.write(1, ms(1000), 0, 1, 7)
		h.write(0, ms(1400), 1, 2, 5)
		more(&h)
		return h
	}
	// Client 1 writes at 2.2 s in its tenure, client 0 at 2.4 s in the
	// one it outlived, from a read before: a lost update 0.2 s late; the
	// lab stalled from..to.
	lostInOutlived := func(from, to int64) hist {
		return outlived(func(h *hist) {
			h.write(1, ms(2200), 0, 1, 0)
			h.write(0, ms(2400), 0, 1, 0)
			h.stall("locklab", from, to)
		})
	}
	// As outlived, client 0's request sent at 0.2 s, 0.8 s before its
	// grant: its lease was counted from there.
	outlivedAsked := func(more func(*hist)) hist {
		var h hist
		h.add(0, history.Invoke, history.Acquire, ms(200))
		h.add(0, history.OK, history.Acquire, ms(1000)).ValidUntil = ms(1500)
		h.add(0, history.Invoke, history.Release, ms(2500))
		h.add(0, history.OK, history.Release, ms(2501))
		h.hold(1, ms(2000), ms(3000), ms(500))
		more(&h)
		return h
	}
	safe := Expect("test", Safe)
	tests := []struct {
		name string
		h    hist
		e    Expectation
		want Status
	}{
		{"outlived by 0.5 s, a 0.49 s stall: the lock's",
			outlived(func(h *hist) { h.stall("locklab", ms(1100), ms(1590)) }), safe, Contradicts},
		{"outlived by 0.5 s, a 0.51 s stall: inconclusive",
			outlived(func(h *hist) { h.stall("locklab", ms(1100), ms(1610)) }), safe, Undecided},
		{"outlived by 0.5 s, stalls of 0.3 s at two times add up: inconclusive",
			outlived(func(h *hist) { h.stall("locklab", ms(1100), ms(1400)); h.stall("worker 0", ms(2100), ms(2400)) }), safe, Undecided},
		{"outlived by 0.5 s, two probes stalled the same 0.3 s: counted once",
			outlived(func(h *hist) { h.stall("locklab", ms(1100), ms(1400)); h.stall("containers", ms(1100), ms(1400)) }), safe, Contradicts},
		{"outlived by 0.5 s, a 0.8 s stall of another client's worker",
			outlived(func(h *hist) { h.stall("worker 5", ms(1100), ms(1900)) }), safe, Contradicts},
		{"an expected outlived grant, a 0.19 s stall on it: decided",
			outlived(func(h *hist) { h.stall("locklab", ms(1900), ms(2090)) }), Expect("test", DoubleGrantOutlived), Agrees},
		{"an expected outlived grant, a 0.6 s stall on it: inconclusive",
			outlived(func(h *hist) { h.stall("locklab", ms(1800), ms(2400)) }), Expect("test", DoubleGrantOutlived), Undecided},
		// The lost update a double grant clear of the stall made.
		{"an expected outlived grant and lost update, a 0.25 s stall on the update alone: decided",
			lostInOutlived(ms(2170), ms(2420)), Expect("test", DoubleGrantOutlived, LostUpdate), Agrees},
		{"an expected outlived grant and lost update, a 0.6 s stall on both: inconclusive",
			lostInOutlived(ms(1900), ms(2500)), Expect("test", DoubleGrantOutlived, LostUpdate), Undecided},
		{"an expected lost update alone, a 0.25 s stall on it: inconclusive",
			lostInOutlived(ms(2170), ms(2420)), Expect("test", LostUpdate), Undecided},
		{"outlived by 0.5 s, a 0.6 s stall while its request waited: inconclusive",
			outlivedAsked(func(h *hist) { h.stall("locklab", ms(300), ms(900)) }), safe, Undecided},
		{"outlived by 0.5 s, a 0.4 s stall while its request waited: the lock's",
			outlivedAsked(func(h *hist) { h.stall("locklab", ms(300), ms(700)) }), safe, Contradicts},
		{"outlived by 0.5 s, a 0.6 s stall before its request: the lock's",
			outlivedAsked(func(h *hist) { h.stall("locklab", ms(-420), ms(180)) }), safe, Contradicts},
		// A consequence nobody expected stands or falls with its grant.
		{"an unexpected outlived grant and lost update, a 0.6 s stall on the grant, clear of the writes: inconclusive",
			lostInOutlived(ms(1300), ms(1900)), safe, Undecided},
		{"an unexpected outlived grant and lost update, a 0.3 s stall on the grant, clear of the writes: the lock's",
			lostInOutlived(ms(1300), ms(1600)), safe, Contradicts},
		{"both valid by 0.6 s, a 0.55 s stall: the lock's",
			bothValid(func(h *hist) { h.stall("locklab", ms(500), ms(1050)) }), safe, Contradicts},
		{"both valid by 0.6 s, a 0.65 s stall ending at the first grant: inconclusive",
			bothValid(func(h *hist) { h.stall("worker 0", ms(350), ms(1000)) }), safe, Undecided},
		{"a lost update 0.3 s late, a 0.25 s stall: the lock's",
			lost(func(h *hist) { h.stall("locklab", ms(1020), ms(1270)) }), safe, Contradicts},
		{"a lost update 0.3 s late, a 0.3 s stall: inconclusive",
			lost(func(h *hist) { h.stall("locklab", ms(1000), ms(1300)) }), safe, Undecided},
		{"a stale write 0.4 s late, a 0.35 s stall: the lock's",
			stale(func(h *hist) { h.stall("worker 0", ms(1020), ms(1370)) }), safe, Contradicts},
		{"a stale write 0.4 s late, a 0.4 s stall: inconclusive",
			stale(func(h *hist) { h.stall("worker 0", ms(1000), ms(1400)) }), safe, Undecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := judge(t, tt.h, tt.e)
			if r.Status != tt.want || r.LabStalled != (tt.want == Undecided) {
				t.Fatalf("status %q, lab stalled %v (%s); want %q", r.Status, r.LabStalled, r.Text, tt.want)
			}
		})
	}
}

// An expected violation that never showed is undecided only when the lab
// stood still for at least half a fault window: too little of the fault
// met a lab exercising the lock.
func TestAMissedViolationNeedsAStalledFault(t *testing.T) {
	clean := func(from, to int64) hist {
		var h hist
		h.hold(0, ms(1000), ms(1500), ms(500))
		h.hold(1, ms(2000), ms(3000), ms(500))
		h.fault(1, ms(1200), ms(2200))
		h.stall("locklab", from, to)
		return h
	}
	e := Expect("test", DoubleGrantOutlived)
	for _, tt := range []struct {
		name     string
		from, to int64
		want     Status
	}{
		{"0.45 s of a 1 s window: missed", ms(1300), ms(1750), Contradicts},
		{"0.55 s of a 1 s window: inconclusive", ms(1300), ms(1850), Undecided},
		{"0.55 s mostly outside the window: missed", ms(2000), ms(2550), Contradicts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := judge(t, clean(tt.from, tt.to), e)
			if r.Status != tt.want {
				t.Fatalf("status %q (%s); want %q", r.Status, r.Text, tt.want)
			}
			if tt.want == Contradicts && !r.Missed {
				t.Errorf("a miss the lab could not have made is not reported as missed: %s", r.Text)
			}
		})
	}
}

// A fault over at once (a crash, a restart) is judged over the lease that
// follows it: that is where the lock answers for it.
func TestAnInstantFaultIsJudgedOverALease(t *testing.T) {
	var h hist
	h.hold(0, ms(1000), ms(1500), ms(1000))
	h.hold(1, ms(2500), ms(3000), ms(1000))
	h.fault(1, ms(2000), ms(2001))
	for _, tt := range []struct {
		name     string
		from, to int64
		lease    int64
		want     Status
	}{
		{"0.33 s on the crash, no lease known: inconclusive", ms(1740), ms(2070), 0, Undecided},
		{"0.33 s on the crash, a 1 s lease after it: decided", ms(1740), ms(2070), ms(1000), Agrees},
		{"0.6 s of the 1 s lease after it: inconclusive", ms(1900), ms(2600), ms(1000), Undecided},
	} {
		for _, crashed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, the crashed hold on record %v", tt.name, crashed), func(t *testing.T) {
				hh := append(hist(nil), h...)
				hh.stall("worker 1", tt.from, tt.to)
				e := Expect("test", Safe)
				v := leaseVerdict(t, hh)
				d := Decisive{Run: Span{hh[0].T, ms(3001)}, Lease: tt.lease}
				if crashed {
					// The crash ended its holder's tenure: the hold ends
					// with the fault, and the lease after it still counts.
					d.Holds = []Span{{ms(1800), ms(2000)}}
				}
				for _, w := range history.FaultWindows(hh) {
					d.Instant = append(d.Instant, Span{w.Start, w.End})
				}
				r := LabStalled(Compare(e, Observe(v, true, Liveness{})), e, d, []Stall{{Who: "worker 1", Proc: 1, Span: Span{tt.from, tt.to}}})
				if r.Status != tt.want {
					t.Fatalf("status %q (%s), want %q", r.Status, r.Text, tt.want)
				}
			})
		}
	}
}

// A restart grants twice only while its holder still holds: an expected
// double grant missed is judged over the rest of that hold, not a lease.
func TestAnInstantFaultIsJudgedUntilItsHolderLetGo(t *testing.T) {
	var h hist
	h.hold(0, ms(1000), ms(9000), ms(20000)) // a 20 s lease, released at 9 s
	h.fault(1, ms(2000), ms(3000))
	e := Expect("test", DoubleGrantBothValid)
	for _, tt := range []struct {
		name     string
		from, to int64
		want     Status
	}{
		{"4.5 s of the 7 s left of the hold: inconclusive", ms(3000), ms(7500), Undecided},
		{"2.5 s of it: missed", ms(3000), ms(5500), Contradicts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := leaseVerdict(t, h)
			d := Decisive{Run: Span{ms(999), ms(12000)}, Lease: ms(20000), Holds: []Span{{ms(1000), ms(9000)}}}
			for _, w := range history.FaultWindows(h) {
				d.Instant = append(d.Instant, Span{w.Start, w.End})
			}
			r := LabStalled(Compare(e, Observe(v, true, Liveness{})), e, d, []Stall{{Who: "containers", Proc: -1, Span: Span{tt.from, tt.to}}})
			if r.Status != tt.want {
				t.Fatalf("status %q (%s), want %q", r.Status, r.Text, tt.want)
			}
		})
	}
}

// A restart over only after the hold it struck had ended never met a held
// lock: an expected double grant it did not show is undecided, stalls or
// not; one over while the hold went on and showing nothing is missed.
func TestAFaultOverAfterItsHoldIsUndecided(t *testing.T) {
	for _, tt := range []struct {
		name    string
		restart int64 // when the restart was over
		want    Status
	}{
		{"over at 9.5 s, the hold ended at 9 s: inconclusive", ms(9500), Undecided},
		{"over at 3 s, the hold went on to 9 s: missed", ms(3000), Contradicts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decisive{Run: Span{ms(999), ms(12000)}, Lease: ms(20000), Holds: []Span{{ms(1000), ms(9000)}},
				Instant: []Span{{ms(2000), tt.restart}}, AtHold: []Span{{ms(2000), tt.restart}}}
			if r := judgeHold(t, d); r.Status != tt.want {
				t.Fatalf("status %q (%s), want %q", r.Status, r.Text, tt.want)
			}
		})
	}
}

// A lasting fault aimed at a hold (a server clock jump left in place)
// that took effect only after that hold ended never met it either: its
// command ran for seconds on a starved machine. One on the holder's links
// in place before the hold ended met its release, however close to it.
func TestALastingFaultInPlaceAfterItsHoldIsUndecided(t *testing.T) {
	for _, tt := range []struct {
		name    string
		inPlace int64 // when the jump was in place
		links   bool  // a fault on the holder's links (it meets the release)
		want    Status
	}{
		{"in place at 9.5 s, the hold ended at 9 s: inconclusive", ms(9500), false, Undecided},
		{"in place at 8.994 s, 6 ms before the hold ended: inconclusive", ms(8994), false, Undecided},
		{"in place at 8.85 s, 150 ms before the hold ended: missed", ms(8850), false, Contradicts},
		{"in place at 2.1 s, the hold went on to 9 s: missed", ms(2100), false, Contradicts},
		{"on the links, in place 6 ms before the hold ended: its release met it, missed", ms(8994), true, Contradicts},
		{"on the links, in place at 9.5 s, the hold ended at 9 s: inconclusive", ms(9500), true, Undecided},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decisive{Run: Span{ms(999), ms(12000)}, Lease: ms(20000), Holds: []Span{{ms(1000), ms(9000)}},
				Faults: []Span{{ms(2000), ms(12000)}}, AtHold: []Span{{ms(2000), tt.inPlace}}, Settle: ms(100)}
			if tt.links {
				d.AtHold, d.AtRelease = nil, d.AtHold
			}
			if r := judgeHold(t, d); r.Status != tt.want {
				t.Fatalf("status %q (%s), want %q", r.Status, r.Text, tt.want)
			}
		})
	}
}

// judgeHold judges, under d, a case expected to grant twice whose history
// is one hold from 1 s to 9 s and no second grant.
func judgeHold(t *testing.T, d Decisive) Result {
	t.Helper()
	var h hist
	h.hold(0, ms(1000), ms(9000), ms(20000))
	e := Expect("test", DoubleGrantBothValid)
	v := leaseVerdict(t, h)
	return LabStalled(Compare(e, Observe(v, true, Liveness{})), e, d, nil)
}

// leaseVerdict is the checker's verdict, under the lease model, of h.
func leaseVerdict(t *testing.T, h hist) checker.Verdict {
	t.Helper()
	c := checker.New(checker.ModelLease, true)
	for _, ev := range h {
		c.Add(ev)
	}
	v, err := c.Verdict(context.Background(), checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

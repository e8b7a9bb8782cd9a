package checker

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
)

// ev builds a hand-written event: proc, type, f, key, t.
func ev(proc int, typ history.Type, f, key string, t int64) history.Event {
	return history.Event{Proc: proc, Type: typ, F: f, Key: key, T: t}
}

const (
	A = history.Acquire
	R = history.Release
)

func run(evs []history.Event) []DoubleGrant { return grantsUnder(ModelLease, evs) }

// grantsUnder checks evs, indexed in order, under model.
func grantsUnder(model Model, evs []history.Event) []DoubleGrant {
	m := NewMutex(model)
	for i, e := range evs {
		e.Index = int64(i)
		m.Add(e)
	}
	return m.DoubleGrants()
}

func TestDoubleGrants(t *testing.T) {
	inv, ok, fail, info := history.Invoke, history.OK, history.Fail, history.Info
	tests := []struct {
		name string
		evs  []history.Event
		want int
	}{
		{"sequential holders", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), ev(1, ok, R, "k", 25),
			ev(2, inv, A, "k", 5), ev(2, ok, A, "k", 30), ev(2, inv, R, "k", 40), ev(2, ok, R, "k", 45),
		}, 0},
		{"overlap", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10),
			ev(2, inv, A, "k", 5), ev(2, ok, A, "k", 15),
			ev(1, inv, R, "k", 20), ev(2, inv, R, "k", 30),
		}, 1},
		{"grant exactly at release invoke is no overlap", []history.Event{
			ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), ev(2, ok, A, "k", 20), ev(2, inv, R, "k", 30),
		}, 0},
		{"different keys never conflict", []history.Event{
			ev(1, ok, A, "k1", 10), ev(2, ok, A, "k2", 11), ev(1, inv, R, "k1", 20), ev(2, inv, R, "k2", 21),
		}, 0},
		{"holder that never released blocks everyone after", []history.Event{
			ev(1, ok, A, "k", 10), ev(2, ok, A, "k", 50), ev(2, inv, R, "k", 60),
		}, 1},
		{"failed and indeterminate acquires grant nothing", []history.Event{
			ev(1, ok, A, "k", 10), ev(2, fail, A, "k", 12), ev(3, info, A, "k", 13), ev(1, inv, R, "k", 20),
		}, 0},
		{"one long holder overlapped by two", []history.Event{
			ev(1, ok, A, "k", 0), ev(2, ok, A, "k", 10), ev(2, inv, R, "k", 20),
			ev(3, ok, A, "k", 30), ev(3, inv, R, "k", 40), ev(1, inv, R, "k", 100),
		}, 2},
		{"re-entry by the holder is one tenure", []history.Event{
			ev(1, ok, A, "k", 0), ev(1, ok, A, "k", 5), ev(1, inv, R, "k", 20), ev(2, ok, A, "k", 30),
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.evs); len(got) != tt.want {
				t.Fatalf("double grants = %d (%+v), want %d", len(got), got, tt.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	got := run([]history.Event{
		ev(1, history.OK, A, "k1", 1_100_000_000), ev(3, history.OK, A, "k1", 1_204_000_000),
		ev(1, history.Invoke, R, "k1", 1_530_000_000),
	})
	if len(got) != 1 {
		t.Fatalf("got %d", len(got))
	}
	s := got[0].Describe(0)
	want := "client 3 acquired k1 at 1.204000 s while client 1 held it since 1.100000 s and released at 1.530000 s"
	if !strings.HasPrefix(s, want) {
		t.Fatalf("Describe = %q", s)
	}
}

// genMutex simulates a correct mutex with random timing: clients take turns,
// each grant strictly after the previous release invoke.
func genMutex(rng *rand.Rand, clients, n int) []history.Event {
	var evs []history.Event
	t := int64(0)
	for i := 0; i < n; i++ {
		p := rng.Intn(clients)
		t += 1 + rng.Int63n(100)
		evs = append(evs, ev(p, history.Invoke, A, "k", t-rng.Int63n(50)))
		evs = append(evs, ev(p, history.OK, A, "k", t))
		t += 1 + rng.Int63n(100)
		evs = append(evs, ev(p, history.Invoke, R, "k", t))
		evs = append(evs, ev(p, history.OK, R, "k", t+rng.Int63n(20)))
	}
	return evs
}

func TestPropertyCorrectMutexPassesInjectedOverlapFails(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		evs := genMutex(rng, 5, 50)
		if got := run(evs); len(got) != 0 {
			t.Fatalf("seed %d: correct mutex flagged: %+v", seed, got[0])
		}
		// Inject one overlap: move one grant to just before the previous
		// holder's release invoke.
		j := 1 + rng.Intn(49)
		prevRelease := evs[4*(j-1)+2].T
		evs[4*j+1].T = prevRelease - 1
		evs[4*j+1].Proc, evs[4*j+2].Proc = 99, 99
		if got := run(evs); len(got) != 1 {
			t.Fatalf("seed %d: injected overlap found %d times", seed, len(got))
		}
	}
}

// A double grant names how it came about where the history shows it: an
// extend answered ok though another had held the key since before it was
// sent, or a release by a third answered ok while the first held it,
// before the grant. Neither where the lock refused the call, nor a
// release after the grant, nor one that a holder outliving its lease
// already explains, under both models.
func TestDoubleGrantMechanisms(t *testing.T) {
	inv, ok, fail := history.Invoke, history.OK, history.Fail
	E := history.Extend
	lease := func(e history.Event, until int64) history.Event { e.ValidUntil = until; return e }
	tests := []struct {
		name string
		evs  []history.Event
		want string
	}{
		{"extend over another's hold answered ok", []history.Event{
			lease(ev(1, ok, A, "k", 10), 100), lease(ev(2, ok, A, "k", 120), 300),
			ev(1, inv, E, "k", 130), lease(ev(1, ok, E, "k", 135), 335),
			ev(1, inv, R, "k", 200), ev(2, inv, R, "k", 250),
		}, RenewedOverAnother},
		{"extend over another's hold refused", []history.Event{
			lease(ev(1, ok, A, "k", 10), 100), lease(ev(2, ok, A, "k", 120), 300),
			ev(1, inv, E, "k", 130), func() history.Event { e := ev(1, fail, E, "k", 135); e.Error = "not held"; return e }(),
			ev(1, inv, R, "k", 200), ev(2, inv, R, "k", 250),
		}, ""},
		{"extend sent before the other's grant", []history.Event{
			lease(ev(1, ok, A, "k", 10), 100), ev(1, inv, E, "k", 110), lease(ev(2, ok, A, "k", 120), 300),
			lease(ev(1, ok, E, "k", 125), 325),
			ev(1, inv, R, "k", 200), ev(2, inv, R, "k", 250),
		}, ""},
		{"a third's release answered ok before the grant", []history.Event{
			lease(ev(3, ok, A, "k", 0), 50), ev(3, inv, R, "k", 60), ev(3, ok, R, "k", 61),
			lease(ev(1, ok, A, "k", 70), 500),
			ev(3, inv, R, "k", 80), ev(3, ok, R, "k", 90),
			lease(ev(2, ok, A, "k", 100), 600), ev(2, inv, R, "k", 150), ev(1, inv, R, "k", 200),
		}, ReleasedOverAnother},
		{"a third's release refused", []history.Event{
			lease(ev(1, ok, A, "k", 70), 500),
			ev(3, inv, R, "k", 80), ev(3, fail, R, "k", 90),
			lease(ev(2, ok, A, "k", 100), 600), ev(2, inv, R, "k", 150), ev(1, inv, R, "k", 200),
		}, ""},
		{"a third's release after the grant", []history.Event{
			lease(ev(1, ok, A, "k", 70), 500), lease(ev(2, ok, A, "k", 100), 600),
			ev(3, inv, R, "k", 110), ev(3, ok, R, "k", 120), ev(2, inv, R, "k", 150), ev(1, inv, R, "k", 200),
		}, ""},
		{"a third's release before a grant the outlived lease explains", []history.Event{
			lease(ev(1, ok, A, "k", 70), 90),
			ev(3, inv, R, "k", 80), ev(3, ok, R, "k", 85),
			lease(ev(2, ok, A, "k", 100), 600), ev(2, inv, R, "k", 150), ev(1, inv, R, "k", 200),
		}, ""},
	}
	for _, tc := range tests {
		for _, model := range []Model{ModelLease, ModelMutex} {
			var got []string
			for _, d := range grantsUnder(model, tc.evs) {
				got = append(got, d.Mechanism)
				if d.Mechanism != "" && !strings.Contains(d.Describe(0), d.Mechanism) {
					t.Errorf("%s (%s): %q does not name %s", tc.name, model, d.Describe(0), d.Mechanism)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("%s (%s): mechanisms %q, want one double grant with %q", tc.name, model, got, tc.want)
			}
		}
	}
}

// Client 2 is granted over 1 (1 outlived its lease) and renews while 1
// still holds: its own renewals are no renewal over another's hold. Then 2
// outlives its lease in turn and 1 is granted again: two double grants,
// both outlived, neither with a mechanism (redis-setnx-px-lua under a
// partition of its holder, beside the suite, was named renewed-over-another).
func TestRenewalsOfAClientGrantedOverAnother(t *testing.T) {
	inv, ok := history.Invoke, history.OK
	E := history.Extend
	lease := func(e history.Event, until int64) history.Event { e.ValidUntil = until; return e }
	evs := []history.Event{
		lease(ev(1, ok, A, "k", 10), 100), lease(ev(2, ok, A, "k", 120), 300),
		ev(2, inv, E, "k", 130), lease(ev(2, ok, E, "k", 135), 335),
		ev(1, inv, R, "k", 200), ev(1, history.Info, R, "k", 210),
		lease(ev(1, ok, A, "k", 400), 500), ev(2, inv, R, "k", 450), ev(1, inv, R, "k", 460),
	}
	for _, model := range []Model{ModelLease, ModelMutex} {
		var got []string
		for _, d := range grantsUnder(model, evs) {
			got = append(got, d.Kind+"/"+d.Mechanism)
		}
		if len(got) == 0 {
			t.Errorf("%s: no double grant", model)
		}
		for _, g := range got {
			if !strings.HasSuffix(g, "/") {
				t.Errorf("%s: double grants %q, want none with a mechanism", model, got)
				break
			}
		}
	}
}

// A client granted over another's hold (a server's clock jumped, its key
// expired early) releases what it was granted, and is granted again while
// the first still holds: two double grants, and the release between them
// is its own, not one that removed another's lock (explore told a
// py-redis-lock run new as released-over-another so).
func TestReleaseOfAGrantOverAnotherIsNoMechanism(t *testing.T) {
	inv, ok := history.Invoke, history.OK
	lease := func(e history.Event, until int64) history.Event { e.ValidUntil = until; return e }
	for _, first := range []int64{600, 90} { // 90: its belief born expired (a long wait)
		evs := []history.Event{
			ev(2, inv, A, "k", 50), lease(ev(1, ok, A, "k", 70), 500),
			lease(ev(2, ok, A, "k", 100), first), ev(2, inv, R, "k", 150), ev(2, ok, R, "k", 151),
			lease(ev(2, ok, A, "k", 160), 700), ev(2, inv, R, "k", 250), ev(1, inv, R, "k", 300),
		}
		for _, model := range []Model{ModelLease, ModelMutex} {
			grants := grantsUnder(model, evs)
			if len(grants) != 2 {
				t.Fatalf("%s: %d double grants, want 2", model, len(grants))
			}
			for _, d := range grants {
				if d.Mechanism != "" || d.Kind != BothValid {
					t.Errorf("%s, first lease to %d: %s, want both-valid with no mechanism", model, first, d.Describe(0))
				}
			}
		}
	}
}

// A double grant is judged by what the first holder believed of its lease
// at the second grant: an extend sent after that grant and answered ok
// does not make an outlived lease valid there after the fact; one sent
// before the grant counts, however late its answer; the description gives
// the belief at the grant. Both models.
func TestDoubleGrantKindIsTheBeliefAtTheGrant(t *testing.T) {
	inv, ok := history.Invoke, history.OK
	E := history.Extend
	const ms = int64(time.Millisecond)
	lease := func(e history.Event, until int64) history.Event { e.ValidUntil = until; return e }
	tests := []struct {
		name  string
		evs   []history.Event
		want  string
		lease string // the describe's "its lease ran to"
	}{
		{"an extend sent after the grant", []history.Event{
			lease(ev(1, ok, A, "k", 10*ms), 100*ms), lease(ev(2, ok, A, "k", 120*ms), 300*ms),
			ev(1, inv, E, "k", 130*ms), lease(ev(1, ok, E, "k", 135*ms), 335*ms),
			ev(1, inv, R, "k", 200*ms), ev(2, inv, R, "k", 250*ms),
		}, OutlivedLease, "its lease ran to 0.100000 s"},
		{"an extend sent before the grant, answered after it", []history.Event{
			lease(ev(1, ok, A, "k", 10*ms), 100*ms), ev(1, inv, E, "k", 90*ms), lease(ev(2, ok, A, "k", 120*ms), 300*ms),
			lease(ev(1, ok, E, "k", 125*ms), 325*ms),
			ev(1, inv, R, "k", 200*ms), ev(2, inv, R, "k", 250*ms),
		}, BothValid, "its lease ran to 0.325000 s"},
		{"two extends, the grant between them", []history.Event{
			lease(ev(1, ok, A, "k", 10*ms), 100*ms), ev(1, inv, E, "k", 50*ms), lease(ev(1, ok, E, "k", 55*ms), 150*ms),
			lease(ev(2, ok, A, "k", 120*ms), 300*ms),
			ev(1, inv, E, "k", 140*ms), lease(ev(1, ok, E, "k", 145*ms), 500*ms),
			ev(1, inv, R, "k", 200*ms), ev(2, inv, R, "k", 250*ms),
		}, BothValid, "its lease ran to 0.150000 s"},
		{"two extends, the grant after the first lease ran out", []history.Event{
			lease(ev(1, ok, A, "k", 10*ms), 100*ms), ev(1, inv, E, "k", 50*ms), lease(ev(1, ok, E, "k", 55*ms), 150*ms),
			lease(ev(2, ok, A, "k", 160*ms), 300*ms),
			ev(1, inv, E, "k", 170*ms), lease(ev(1, ok, E, "k", 175*ms), 500*ms),
			ev(1, inv, R, "k", 200*ms), ev(2, inv, R, "k", 250*ms),
		}, OutlivedLease, "its lease ran to 0.150000 s"},
		{"told its lock was gone before the grant, its belief still running", []history.Event{
			lease(ev(1, ok, A, "k", 10*ms), 500*ms), ev(1, history.Info, history.Lost, "k", 100*ms),
			lease(ev(2, ok, A, "k", 120*ms), 300*ms),
			ev(1, inv, R, "k", 200*ms), ev(2, inv, R, "k", 250*ms),
		}, OutlivedLease, "its lease ran to 0.500000 s; it was told at 0.100000 s that its lock was gone"},
		{"an extend answered not held before the grant: the lease lost early, not a loss signal", []history.Event{
			lease(ev(1, ok, A, "k", 10*ms), 500*ms), ev(1, inv, E, "k", 90*ms),
			{Proc: 1, Type: history.Fail, F: E, Key: "k", T: 100 * ms, Error: "extend: not held"},
			lease(ev(2, ok, A, "k", 120*ms), 300*ms),
			ev(1, inv, R, "k", 200*ms), ev(2, inv, R, "k", 250*ms),
		}, BothValid, "its lease ran to 0.500000 s:"},
		{"told its lock was gone after the grant", []history.Event{
			lease(ev(1, ok, A, "k", 10*ms), 500*ms), lease(ev(2, ok, A, "k", 120*ms), 300*ms),
			ev(1, history.Info, history.Lost, "k", 130*ms),
			ev(1, inv, R, "k", 200*ms), ev(2, inv, R, "k", 250*ms),
		}, BothValid, "its lease ran to 0.500000 s:"},
	}
	for _, tc := range tests {
		for _, model := range []Model{ModelLease, ModelMutex} {
			got := grantsUnder(model, tc.evs)
			if len(got) != 1 || got[0].Kind != tc.want || !strings.Contains(got[0].Describe(0), tc.lease) {
				t.Errorf("%s (%s): %+v, want one %q saying %q", tc.name, model, got, tc.want, tc.lease)
			}
		}
	}
}

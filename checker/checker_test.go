package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/history"
)

func verdict(t testing.TB, evs []history.Event, opt Options) Verdict {
	t.Helper()
	c := New(ModelLease, true)
	for i, e := range evs {
		e.Index = int64(i)
		c.Add(e)
	}
	v, err := c.Verdict(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	classesDeclared(t, v)
	return v
}

func kinds(v Verdict) string {
	var ks []string
	for _, x := range v.Violations {
		ks = append(ks, string(x.Kind))
	}
	return strings.Join(ks, ",")
}

func tok(n uint64) *uint64 { return &n }

func withToken(e history.Event, t uint64) history.Event { e.Token = tok(t); return e }

func withValidUntil(e history.Event, vu int64) history.Event { e.ValidUntil = vu; return e }

func withValue(e history.Event, v string) history.Event { e.Value = json.RawMessage(v); return e }

func TestVerdictClasses(t *testing.T) {
	inv, ok, fail, info := history.Invoke, history.OK, history.Fail, history.Info
	W, Rd := history.Write, history.Read
	tests := []struct {
		name       string
		evs        []history.Event
		wantKinds  string
		wantLinear LinStatus
	}{
		{"clean mutex", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), ev(1, ok, R, "k", 25),
			ev(2, inv, A, "k", 5), ev(2, ok, A, "k", 30), ev(2, inv, R, "k", 40), ev(2, ok, R, "k", 45),
		}, "", "yes"},
		{"double grant, both leases valid", []history.Event{
			ev(1, inv, A, "k", 0), withValidUntil(ev(1, ok, A, "k", 10), 1000),
			ev(2, inv, A, "k", 5), withValidUntil(ev(2, ok, A, "k", 15), 1000),
			ev(1, inv, R, "k", 20), ev(1, ok, R, "k", 21), ev(2, inv, R, "k", 30), ev(2, ok, R, "k", 31),
		}, string(DoubleGrantBothValid), "no"},
		{"double grant, holder outlived its lease", []history.Event{
			ev(1, inv, A, "k", 0), withValidUntil(ev(1, ok, A, "k", 10), 50),
			ev(2, inv, A, "k", 60), ev(2, ok, A, "k", 70),
			ev(1, inv, R, "k", 100), ev(1, fail, R, "k", 101), ev(2, inv, R, "k", 120), ev(2, ok, R, "k", 121),
		}, string(DoubleGrantOutlived) + "," + string(Revoked), "no"}, // its release answered "not held": taken away
		{"double grant, holder outlived its lease and never told", []history.Event{
			ev(1, inv, A, "k", 0), withValidUntil(ev(1, ok, A, "k", 10), 50),
			ev(2, inv, A, "k", 60), ev(2, ok, A, "k", 70),
			ev(1, inv, R, "k", 100), ev(1, ok, R, "k", 101), ev(2, inv, R, "k", 120), ev(2, ok, R, "k", 121),
		}, string(DoubleGrantOutlived), "no"},
		{"belief recorded as it let go decides the class", []history.Event{
			ev(1, inv, A, "k", 0), withValidUntil(ev(1, ok, A, "k", 10), 50),
			ev(2, inv, A, "k", 60), ev(2, ok, A, "k", 70),
			withValidUntil(ev(1, inv, R, "k", 100), 150), ev(1, ok, R, "k", 101), ev(2, inv, R, "k", 120), ev(2, ok, R, "k", 121),
		}, string(DoubleGrantBothValid), "no"}, // its slow clock made it believe in its lease past 70
		{"indeterminate acquire may take effect later: linearizable", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, info, A, "k", 10),
			ev(2, inv, A, "k", 5), ev(2, fail, A, "k", 12),
		}, "", "yes"},
		{"indeterminate acquire then another holder: linearizable (it never took effect)", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, info, A, "k", 10),
			ev(2, inv, A, "k", 20), ev(2, ok, A, "k", 30), ev(2, inv, R, "k", 40), ev(2, ok, R, "k", 45),
		}, "", "yes"},
		{"release by a non-holder that succeeded: not linearizable", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10),
			ev(2, inv, R, "k", 20), ev(2, ok, R, "k", 25),
		}, string(PhantomRelease), "no"},
		{"indeterminate acquire then its own release: it took effect", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, info, A, "k", 10),
			ev(1, inv, R, "k", 20), ev(1, ok, R, "k", 25),
		}, "", "yes"},
		{"indeterminate release frees the lock at its invocation", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), ev(1, info, R, "k", 30),
			ev(2, inv, A, "k", 15), ev(2, ok, A, "k", 22), ev(2, inv, R, "k", 40), ev(2, ok, R, "k", 45),
		}, "", "yes"},
		{"two indeterminate acquires and a holder: linearizable (neither took effect)", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, info, A, "k", 10), ev(3, inv, A, "k", 1), ev(3, info, A, "k", 11),
			ev(2, inv, A, "k", 20), ev(2, ok, A, "k", 30),
		}, "", "yes"},
		{"fencing token went backwards", []history.Event{
			ev(1, inv, A, "k", 0), withToken(ev(1, ok, A, "k", 10), 7), ev(1, inv, R, "k", 20), ev(1, ok, R, "k", 21),
			ev(2, inv, A, "k", 30), withToken(ev(2, ok, A, "k", 40), 5), ev(2, inv, R, "k", 50), ev(2, ok, R, "k", 51),
		}, string(TokenRegressed), "yes"},
		{"stale write accepted", []history.Event{
			withToken(withValue(ev(2, ok, W, "acct", 10), `{"balance":90,"read":100}`), 8),
			withToken(withValue(ev(1, ok, W, "acct", 20), `{"balance":97,"read":90}`), 7),
		}, string(StaleWrite), "skipped-ok"},
		{"lost update", []history.Event{
			withValue(ev(1, ok, Rd, "acct", 0), `{"balance":100}`),
			withValue(ev(2, ok, Rd, "acct", 1), `{"balance":100}`),
			withValue(ev(1, ok, W, "acct", 2), `{"balance":97,"read":100}`),
			withValue(ev(2, ok, W, "acct", 3), `{"balance":97,"read":100}`),
		}, string(LostUpdate), "skipped-ok"},
		{"fenced store refused the stale write: no violation", []history.Event{
			withToken(withValue(ev(2, ok, W, "acct", 10), `{"balance":90,"read":100}`), 8),
			withToken(withValue(ev(1, fail, W, "acct", 20), `{"balance":97,"read":100}`), 7),
		}, "", "skipped-ok"},
		{"task processed twice", []history.Event{
			withValue(ev(1, ok, W, "task-3", 10), `{"processed":1}`),
			withValue(ev(2, ok, W, "task-3", 20), `{"processed":2}`),
		}, string(DuplicateTask), "skipped-ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := verdict(t, tt.evs, Options{})
			if got := kinds(v); got != tt.wantKinds {
				t.Errorf("violations %q, want %q (%+v)", got, tt.wantKinds, v.Violations)
			}
			want := tt.wantLinear
			if want == "skipped-ok" {
				want = "yes" // no lock operations: every key trivially linearizable
			}
			if v.Linearizable != want {
				t.Errorf("linearizable %q, want %q", v.Linearizable, want)
			}
		})
	}
}

func TestNonLinearizableKeyGetsVisualization(t *testing.T) {
	// A history without keys (a Jepsen history of one lock) gets a name
	// of its own, not "linearizability-.html".
	for _, tc := range []struct{ key, file string }{{"k/1", "linearizability-k_1.html"}, {"", "linearizability.html"}} {
		dir := t.TempDir()
		v := verdict(t, []history.Event{
			ev(1, history.Invoke, A, tc.key, 0), ev(1, history.OK, A, tc.key, 10),
			ev(2, history.Invoke, A, tc.key, 5), ev(2, history.OK, A, tc.key, 15),
		}, Options{HTMLDir: dir})
		if v.Linearizable != "no" || len(v.Linear) != 1 || v.Linear[0].HTML == "" {
			t.Fatalf("key %q: verdict %+v", tc.key, v)
		}
		b, err := os.ReadFile(v.Linear[0].HTML)
		if err != nil || !strings.Contains(string(b), "<html") {
			t.Fatalf("key %q: visualization: %v", tc.key, err)
		}
		if v.Linear[0].HTML != filepath.Join(dir, tc.file) {
			t.Fatalf("key %q: written to %s, want %s", tc.key, v.Linear[0].HTML, tc.file)
		}
	}
}

// TestTimeLimitBoundsPorcupineNotTheVerdict: a time limit too short for
// porcupine to decide anything (it gives Unknown) leaves the verdict
// decided, by the exact mutex check: "no" with the one double grant of the
// history, and "yes" for the same history without it. The limit only
// bounds porcupine's drawing of a failing key.
func TestTimeLimitBoundsPorcupineNotTheVerdict(t *testing.T) {
	const limit = time.Nanosecond
	var clean []history.Event
	for p := 0; p < 60; p++ {
		clean = append(clean, ev(p, history.Invoke, A, "k", int64(p)), ev(p, history.Info, A, "k", int64(p)+1))
		clean = append(clean, ev(100+p, history.Invoke, R, "k", int64(p)), ev(100+p, history.Info, R, "k", int64(p)+1))
	}
	clean = append(clean, ev(999, history.Invoke, A, "k", 1000), ev(999, history.OK, A, "k", 1001))
	overlap := append(append([]history.Event(nil), clean...), ev(998, history.Invoke, A, "k", 1002), ev(998, history.OK, A, "k", 1003))

	l := NewLinear(ModelLease)
	for _, e := range overlap {
		l.Add(e)
	}
	res, err := l.Check(context.Background(), limit, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Result != porcupine.Unknown {
		t.Fatalf("porcupine with a %v limit: %+v, want one key, Unknown", limit, res)
	}

	v := verdict(t, overlap, Options{TimeLimit: limit, HTMLDir: t.TempDir()})
	if v.Linearizable != "no" || len(v.DoubleGrants) != 1 {
		t.Fatalf("overlap, %v limit: linearizable %q, %d double grants; want no, 1", limit, v.Linearizable, len(v.DoubleGrants))
	}
	if len(v.Linear) != 1 || v.Linear[0].Result != porcupine.Illegal {
		t.Fatalf("key result %+v, want Illegal (decided by the mutex check)", v.Linear)
	}
	if v := verdict(t, clean, Options{TimeLimit: limit}); v.Linearizable != "yes" || len(v.Violations) != 0 {
		t.Fatalf("clean, %v limit: linearizable %q, %v; want yes, none", limit, v.Linearizable, kinds(v))
	}
}

// TestPropertyLinearizability: a correct mutex with random timing is
// linearizable; moving one grant into the previous tenure makes it not.
func TestPropertyLinearizability(t *testing.T) {
	for seed := int64(0); seed < 100; seed++ {
		rng := rand.New(rand.NewSource(seed))
		evs := genMutex(rng, 5, 40)
		if v := verdict(t, evs, Options{}); v.Linearizable != "yes" || len(v.Violations) != 0 {
			t.Fatalf("seed %d: correct mutex: %s %v", seed, v.Linearizable, kinds(v))
		}
		j := 1 + rng.Intn(39)
		evs[4*j+1].T = evs[4*(j-1)+2].T - 1
		evs[4*j].T = min(evs[4*j].T, evs[4*j+1].T-1)
		evs[4*j].Proc, evs[4*j+1].Proc, evs[4*j+2].Proc, evs[4*j+3].Proc = 99, 99, 99, 99
		if v := verdict(t, evs, Options{}); v.Linearizable != "no" || len(v.DoubleGrants) != 1 {
			t.Fatalf("seed %d: injected overlap: %s, %d double grants", seed, v.Linearizable, len(v.DoubleGrants))
		}
	}
}

// manyKeys spreads n correct-mutex cycles over keys (4 events each).
func manyKeys(n, keys int) []history.Event {
	rng := rand.New(rand.NewSource(1))
	var evs []history.Event
	for k := 0; k < keys; k++ {
		for _, e := range genMutex(rng, 32, n/keys) {
			e.Key = fmt.Sprintf("k%d", k)
			evs = append(evs, e)
		}
	}
	for i := range evs {
		evs[i].Index = int64(i)
	}
	return evs
}

// fencedManyKeys is a million events of correct mutexes over 8 keys,
// each grant with a token that only grows.
func fencedManyKeys() []history.Event {
	evs := manyKeys(250_000, 8)
	for i := range evs {
		if evs[i].Type == history.OK && evs[i].F == A {
			evs[i].Token = tok(uint64(i))
		}
	}
	return evs
}

// checkLongKey checks one key's linearizability alone.
func checkLongKey(evs []history.Event) ([]KeyResult, error) {
	l := NewLinear(ModelLease)
	for _, e := range evs {
		l.Add(e)
	}
	return l.Check(context.Background(), time.Minute, "")
}

// BenchmarkDoubleGrantsAndFencingMillionEvents: target under 2 s, 300 MB.
func BenchmarkDoubleGrantsAndFencingMillionEvents(b *testing.B) {
	evs := fencedManyKeys()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := checkWith(b, false, evs); len(v.Violations) != 0 {
			b.Fatal(v.Violations[0].Text)
		}
	}
}

// BenchmarkLinearizable10kOpsKey: target under 1 s.
func BenchmarkLinearizable10kOpsKey(b *testing.B) {
	evs := manyKeys(5_000, 1) // 5,000 cycles = 10,000 operations
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, _ := checkLongKey(evs)
		if res[0].Result != porcupine.Ok || res[0].Ops != 10_000 {
			b.Fatalf("%+v", res[0])
		}
	}
}

// The correctness half of the two benchmarks above, which `make test` does
// not run: a million events of correct mutexes over 8 keys with increasing
// tokens give no violation, and a 10,000-operation key is linearizable and
// counted whole.
func TestMillionEventsCleanAndLongKeyLinearizable(t *testing.T) {
	if v := checkWith(t, false, fencedManyKeys()); len(v.Violations) != 0 {
		t.Fatalf("%d violations (first: %v)", len(v.Violations), v.Violations)
	}
	res, err := checkLongKey(manyKeys(5_000, 1))
	if err != nil || len(res) != 1 || res[0].Result != porcupine.Ok || res[0].Ops != 10_000 {
		t.Fatalf("10k-operation key: %+v %v", res, err)
	}
}

// TestIndeterminateAcquireThenRelease: a process whose acquire came back
// indeterminate and which then released the lock successfully held it for
// at least one instant inside that release. That instant must find the
// lock free of every other holder, or the release was a phantom.
func TestIndeterminateAcquireThenRelease(t *testing.T) {
	lost := []history.Event{ev(1, history.Invoke, A, "k", 10), ev(1, history.Info, A, "k", 20)}
	for _, tt := range []struct {
		name    string
		rest    []history.Event
		phantom bool
	}{
		{"nobody else", []history.Event{ev(1, history.Invoke, R, "k", 30), ev(1, history.OK, R, "k", 40)}, false},
		{"another holds throughout", []history.Event{
			ev(2, history.Invoke, A, "k", 21), ev(2, history.OK, A, "k", 22),
			ev(1, history.Invoke, R, "k", 30), ev(1, history.OK, R, "k", 40),
			ev(2, history.Invoke, R, "k", 50), ev(2, history.OK, R, "k", 51)}, true},
		{"another lets go during the release", []history.Event{
			ev(2, history.Invoke, A, "k", 21), ev(2, history.OK, A, "k", 22),
			ev(1, history.Invoke, R, "k", 30), ev(2, history.Invoke, R, "k", 35),
			ev(1, history.OK, R, "k", 40), ev(2, history.OK, R, "k", 41)}, false},
		{"another's release written after later events", []history.Event{
			ev(2, history.Invoke, A, "k", 21), ev(2, history.OK, A, "k", 22),
			ev(1, history.Invoke, R, "k", 30), ev(1, history.OK, R, "k", 40),
			ev(3, history.Invoke, A, "k", 45), ev(2, history.Invoke, R, "k", 35), ev(2, history.OK, R, "k", 46),
			ev(3, history.OK, A, "k", 47), ev(3, history.Invoke, R, "k", 48), ev(3, history.OK, R, "k", 49)}, false},
		{"another lets go the instant it is answered", []history.Event{
			ev(2, history.Invoke, A, "k", 21), ev(2, history.OK, A, "k", 22),
			ev(1, history.Invoke, R, "k", 30), ev(1, history.OK, R, "k", 40),
			ev(2, history.Invoke, R, "k", 40), ev(2, history.OK, R, "k", 41)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := verdict(t, append(append([]history.Event(nil), lost...), tt.rest...), Options{})
			if got := v.Classes[PhantomRelease] == 1 && v.Linearizable == "no"; got != tt.phantom {
				t.Fatalf("phantom release found = %v, want %v (linearizable %s, %v)", got, tt.phantom, v.Linearizable, kinds(v))
			}
		})
	}
}

func TestSafe(t *testing.T) {
	tests := []struct {
		v    Verdict
		want bool
	}{
		{Verdict{Linearizable: LinYes}, true},
		{Verdict{Linearizable: LinSkipped}, true},
		{Verdict{Linearizable: LinNo}, false},
		{Verdict{Linearizable: LinYes, Violations: []Violation{{Kind: LostUpdate}}}, false},
		{Verdict{Linearizable: LinSkipped, Violations: []Violation{{Kind: StaleWrite}}}, false},
	}
	for _, tt := range tests {
		if got := tt.v.Safe(); got != tt.want {
			t.Errorf("%+v: Safe() = %v, want %v", tt.v, got, tt.want)
		}
		if got := Safe(len(tt.v.Violations), tt.v.Linearizable); got != tt.want {
			t.Errorf("%+v: Safe(counts) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestDoubleGrantClass(t *testing.T) {
	for kind, want := range map[string]Class{BothValid: DoubleGrantBothValid, OutlivedLease: DoubleGrantOutlived} {
		if got := (DoubleGrant{Kind: kind}).Class(); got != want {
			t.Errorf("%s: class %q, want %q", kind, got, want)
		}
	}
}

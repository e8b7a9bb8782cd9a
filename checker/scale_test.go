package checker

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/locklab/locklab/history"
)

// contended simulates a correct lock service on one key with clients
// polling for it, replies lost now and then (the client retires; a new
// process takes its place), and returns the history in time order: valid
// by construction, the service's own execution is the witness.
func contended(seed uint64, clients, grants int) []history.Event {
	rng := rand.New(rand.NewPCG(seed, 3))
	var evs []history.Event
	add := func(proc int, typ history.Type, f string, t int64) {
		evs = append(evs, history.Event{Proc: proc, Type: typ, F: f, Key: "k", T: t})
	}
	procs := make([]int, clients) // the process id each client records as now
	next := clients
	for i := range procs {
		procs[i] = i
	}
	waiting := make([]int64, clients) // when each client invoked its acquire
	for i := range waiting {
		waiting[i] = int64(rng.IntN(100))
		add(procs[i], history.Invoke, history.Acquire, waiting[i])
	}
	t := int64(100)
	for g := 0; g < grants; g++ {
		c := rng.IntN(clients) // the service grants this waiter
		grant := max(t, waiting[c]) + 1 + int64(rng.IntN(5))
		switch rng.IntN(50) {
		case 0: // the grant's reply is lost: granted, nobody knows; it expires
			add(procs[c], history.Info, history.Acquire, grant+20)
			procs[c], next = next, next+1
			t = grant + 200 // the orphan's TTL
		default:
			add(procs[c], history.OK, history.Acquire, grant+2)
			hold := grant + 2 + 1 + int64(rng.IntN(30))
			add(procs[c], history.Invoke, history.Release, hold)
			applied := hold + 1
			if rng.IntN(50) == 0 { // the release's reply is lost
				add(procs[c], history.Info, history.Release, applied+20)
				procs[c], next = next, next+1
			} else {
				add(procs[c], history.OK, history.Release, applied+1+int64(rng.IntN(3)))
			}
			t = applied
		}
		// Another waiter gives up now and then: a failed acquire.
		if w := rng.IntN(clients); w != c && rng.IntN(10) == 0 {
			add(procs[w], history.Fail, history.Acquire, t)
			waiting[w] = t + 1
			add(procs[w], history.Invoke, history.Acquire, waiting[w])
		}
		waiting[c] = t + 1 + int64(rng.IntN(3))
		add(procs[c], history.Invoke, history.Acquire, waiting[c])
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].T < evs[j].T })
	for i := range evs {
		evs[i].Index = int64(i)
	}
	return evs
}

func checkAll(t testing.TB, model Model, evs []history.Event) Verdict {
	return checkModel(t, model, true, evs)
}

// checkWith runs the whole checker over evs under the lease model,
// linearizability included or not.
func checkWith(t testing.TB, linear bool, evs []history.Event) Verdict {
	return checkModel(t, ModelLease, linear, evs)
}

// checkModel runs the whole checker over evs under model.
func checkModel(t testing.TB, model Model, linear bool, evs []history.Event) Verdict {
	c := New(model, linear)
	for _, e := range evs {
		c.Add(e)
	}
	v, err := c.Verdict(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A busy key with 64 clients, lost replies and no quiescent point is
// decided under each model (porcupine gave up on such keys), valid by
// construction; one grant moved into another's tenure is found.
func TestBusyKeyIsDecided(t *testing.T) {
	for _, model := range Models {
		t.Run(string(model), func(t *testing.T) {
			evs := contended(1, 64, 100_000)
			if v := checkAll(t, model, evs); v.Linearizable != "yes" || len(v.Violations) != 0 {
				t.Fatalf("a correct service's history: linearizable %s, %d violations", v.Linearizable, len(v.Violations))
			}
			// Inject: one client's grant while the previous holder still holds.
			for i := len(evs) / 2; i < len(evs); i++ {
				if evs[i].F == history.Acquire && evs[i].Type == history.OK {
					for j := i + 1; j < len(evs); j++ {
						if evs[j].Proc == evs[i].Proc && evs[j].F == history.Release && evs[j].Type == history.Invoke {
							evs[j].T += 10_000 // the holder releases much later: later grants overlap it
							sort.SliceStable(evs, func(a, b int) bool { return evs[a].T < evs[b].T })
							v := checkAll(t, model, evs)
							if v.Linearizable != "no" || len(v.DoubleGrants) == 0 {
								t.Fatalf("an injected overlap was not found: %s", v.Linearizable)
							}
							return
						}
					}
				}
			}
			t.Fatal("no grant to inject into")
		})
	}
}

// BenchmarkExactMillionOpsOneKey: one key, 64 clients, lost replies, about
// a million operations, under each model (target: under 2 s and 300 MB).
func BenchmarkExactMillionOpsOneKey(b *testing.B) {
	evs := contended(2, 64, 480_000)
	ops := 0
	for _, e := range evs {
		if e.Type == history.Invoke {
			ops++
		}
	}
	for _, model := range Models {
		b.Run(string(model), func(b *testing.B) {
			b.ReportMetric(float64(ops), "ops")
			b.ReportAllocs()
			b.ResetTimer()
			var peak uint64
			for i := 0; i < b.N; i++ {
				v := checkAll(b, model, evs)
				if v.Linearizable != "yes" {
					b.Fatal(v.Linearizable)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
		})
	}
}

func BenchmarkExactMillionOpsOneKeyNoDrawing(b *testing.B) {
	evs := contended(2, 64, 480_000)
	for _, model := range Models {
		b.Run(string(model), func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if v := checkModel(b, model, false, evs); len(v.Violations) != 0 {
					b.Fatal(v.Violations[0].Text)
				}
			}
		})
	}
}

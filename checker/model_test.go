package checker

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/locklab/locklab/history"
)

func judge(t *testing.T, model Model, evs []history.Event) Verdict {
	t.Helper()
	c := New(model, true)
	for i, e := range evs {
		e.Index = int64(i)
		c.Add(e)
	}
	v, err := c.Verdict(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func withError(e history.Event, err string) history.Event { e.Error = err; return e }

func crashOf(proc int, t int64) history.Event {
	return history.Event{Proc: proc, Type: history.Info, F: history.Crash, T: t}
}

// Where the two models part: what ends a tenure. Each history is judged
// under both; the classes of violation, the revocations during a release
// (lease model) and linearizability must be exactly so.
func TestModelsDiffer(t *testing.T) {
	inv, ok, fail, info := history.Invoke, history.OK, history.Fail, history.Info
	notHeld := func(e history.Event) history.Event { return withError(e, "release k: not held") }
	ext := func(proc int, typ history.Type, t int64) history.Event { return ev(proc, typ, history.Extend, "k", t) }
	type want struct {
		classes   map[Class]int
		anomalies int
		linear    LinStatus
	}
	tests := []struct {
		name         string
		evs          []history.Event
		mutex, lease want
	}{
		{"release answered not held, another granted while it was in flight", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20),
			ev(2, inv, A, "k", 15), ev(2, ok, A, "k", 30), notHeld(ev(1, fail, R, "k", 40)),
		}, want{map[Class]int{DoubleGrantNeverReleased: 1}, 0, "no"}, want{map[Class]int{}, 1, "yes"}},
		{"release answered not held, nobody granted", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), notHeld(ev(1, fail, R, "k", 40)),
		}, want{map[Class]int{}, 0, "yes"}, want{map[Class]int{}, 1, "yes"}},
		{"release refused as unavailable: no revocation, the tenure ends at it under lease", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20),
			withError(ev(1, fail, R, "k", 21), "release k: server unavailable: connection refused"),
			ev(2, inv, A, "k", 30), ev(2, ok, A, "k", 40),
		}, want{map[Class]int{DoubleGrantNeverReleased: 1}, 0, "no"}, want{map[Class]int{}, 0, "yes"}},
		{"the holder's release fails, then it is granted the lock again", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), notHeld(ev(1, fail, R, "k", 21)),
			ev(1, inv, A, "k", 30), ev(1, ok, A, "k", 40), ev(1, inv, R, "k", 50), ev(1, ok, R, "k", 51),
		}, want{map[Class]int{DoubleGrantNeverReleased: 1}, 0, "no"}, want{map[Class]int{}, 1, "yes"}},
		{"the holder's release fails, then one of its own succeeds", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), notHeld(ev(1, fail, R, "k", 21)),
			ev(1, inv, R, "k", 30), ev(1, ok, R, "k", 31), ev(2, inv, A, "k", 40), ev(2, ok, A, "k", 41),
		}, want{map[Class]int{}, 0, "yes"}, want{map[Class]int{PhantomRelease: 1}, 1, "no"}},
		{"a crashed holder, then another grant", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), crashOf(1, 20), ev(2, inv, A, "k", 25), ev(2, ok, A, "k", 30),
		}, want{map[Class]int{DoubleGrantNeverReleased: 1}, 0, "no"}, want{map[Class]int{}, 0, "yes"}},
		{"a release never answered: indeterminate, it may free the lock at its invocation", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), ev(2, inv, A, "k", 25), ev(2, ok, A, "k", 30),
		}, want{map[Class]int{}, 0, "yes"}, want{map[Class]int{}, 0, "yes"}},
		{"a release answered info: the same", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, R, "k", 20), ev(2, inv, A, "k", 25), ev(2, ok, A, "k", 30),
			ev(1, info, R, "k", 40),
		}, want{map[Class]int{}, 0, "yes"}, want{map[Class]int{}, 0, "yes"}},
		{"re-entry: a holder granted the lock again with no release", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, A, "k", 20), ev(1, ok, A, "k", 21),
		}, want{map[Class]int{DoubleGrantNeverReleased: 1}, 0, "no"}, want{map[Class]int{}, 0, "yes"}},
		// Seen on a real run (gc-pause-past-ttl, redis-setnx-px-lua): the
		// belief recorded as the holder let go of its second lease made
		// the grant during its first read "both leases valid".
		{"a holder's later lease does not reclassify a grant during its first", []history.Event{
			ev(0, inv, A, "k", 0), withValidUntil(ev(0, ok, A, "k", 10), 100), ev(1, inv, A, "k", 20), withValidUntil(ev(1, ok, A, "k", 150), 250),
			withValidUntil(ev(0, inv, R, "k", 200), 100), notHeld(ev(0, fail, R, "k", 201)), ev(1, inv, R, "k", 250), ev(1, ok, R, "k", 251),
			ev(0, inv, A, "k", 290), withValidUntil(ev(0, ok, A, "k", 300), 400), withValidUntil(ext(0, ok, 310), 500),
			withValidUntil(ev(0, inv, R, "k", 350), 500), ev(0, ok, R, "k", 351),
		}, want{map[Class]int{DoubleGrantOutlived: 1, Revoked: 1, DoubleGrantNeverReleased: 1}, 0, "no"},
			want{map[Class]int{DoubleGrantOutlived: 1, Revoked: 1}, 0, "no"}},
		{"an indeterminate acquire, its release refused, then a release that succeeds", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, info, A, "k", 10), ev(1, inv, R, "k", 20), notHeld(ev(1, fail, R, "k", 21)),
			ev(1, inv, R, "k", 30), ev(1, ok, R, "k", 31),
		}, want{map[Class]int{}, 0, "yes"}, want{map[Class]int{PhantomRelease: 1}, 0, "no"}},
	}
	for _, tt := range tests {
		for model, w := range map[Model]want{ModelMutex: tt.mutex, ModelLease: tt.lease} {
			t.Run(tt.name+"/"+string(model), func(t *testing.T) {
				v := judge(t, model, tt.evs)
				if !reflect.DeepEqual(v.Classes, w.classes) || len(v.Anomalies) != w.anomalies || v.Linearizable != w.linear {
					t.Fatalf("classes %v, %d anomalies, linearizable %s; want %v, %d, %s\n%+v\n%+v",
						v.Classes, len(v.Anomalies), v.Linearizable, w.classes, w.anomalies, w.linear, v.Violations, v.Anomalies)
				}
			})
		}
	}
}

// The words of a mutex-model double grant say why the holder still held.
func TestNeverReleasedSaysWhy(t *testing.T) {
	inv, ok, fail := history.Invoke, history.OK, history.Fail
	tests := []struct {
		name string
		evs  []history.Event
		want []string
	}{
		{"failed release", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 1e9), ev(1, inv, R, "k", 2e9), withError(ev(1, fail, R, "k", 4e9), "not held"),
			ev(2, inv, A, "k", 3e9), ev(2, ok, A, "k", 3.5e9)},
			[]string{"client 2 acquired k at 3.500000 s while client 1 held it since 1.000000 s and never released it",
				"its release invoked at 2.000000 s failed at 4.000000 s (not held), and a failed operation never happened", "(events 1, 2, 3, 5)"}},
		{"crash", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 1e9), crashOf(1, 2e9), ev(2, inv, A, "k", 3e9), ev(2, ok, A, "k", 3.5e9)},
			[]string{"while client 1 held it since 1.000000 s and never released it: it crashed at 2.000000 s, and nothing expires", "(events 1, 2, 4)"}},
		{"re-entry", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 1e9), ev(1, inv, A, "k", 2e9), ev(1, ok, A, "k", 2.5e9)},
			[]string{"client 1 acquired k again at 2.500000 s while it held it since 1.000000 s and never released it: it made no release in between"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(t, ModelMutex, tt.evs)
			if len(v.Violations) != 1 {
				t.Fatalf("violations %+v, want one", v.Violations)
			}
			for _, s := range tt.want {
				if !strings.Contains(v.Violations[0].Text, s) {
					t.Errorf("%q does not say %q", v.Violations[0].Text, s)
				}
			}
		})
	}
}

// A revocation during a release is reported with its events, in words
// that say whether the lock went to another while the release was in
// flight; a grant after the answer is not "meanwhile".
func TestRevokedInReleaseWords(t *testing.T) {
	inv, ok, fail := history.Invoke, history.OK, history.Fail
	base := []history.Event{ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 1e9), ev(1, inv, R, "k", 2e9), ev(2, inv, A, "k", 2.1e9)}
	tests := []struct {
		name   string
		rest   []history.Event
		events []int64
		says   string
	}{
		{"granted while in flight", []history.Event{ev(2, ok, A, "k", 3e9), withError(ev(1, fail, R, "k", 4e9), "release k: not held")},
			[]int64{1, 2, 4, 5}, "client 2 was granted it at 3.000000 s, after client 1 (holder since 1.000000 s) asked to release it at 2.000000 s and before the answer came at 4.000000 s (release k: not held)"},
		{"granted after the answer", []history.Event{withError(ev(1, fail, R, "k", 4e9), "release k: not held"), ev(2, ok, A, "k", 5e9)},
			[]int64{1, 2, 4}, "was answered at 4.000000 s that it did not hold the lock (release k: not held; holder since 1.000000 s): its lease had gone before the release reached the server, with no grant to anyone meanwhile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(t, ModelLease, append(append([]history.Event(nil), base...), tt.rest...))
			if len(v.Violations) != 0 || len(v.Anomalies) != 1 || !v.Safe() {
				t.Fatalf("violations %+v, anomalies %+v: want none, one", v.Violations, v.Anomalies)
			}
			a := v.Anomalies[0]
			if a.Kind != RevokedInRelease || a.Key != "k" || !reflect.DeepEqual(a.Events, tt.events) || !strings.Contains(a.Text, tt.says) {
				t.Fatalf("anomaly %+v; want events %v and %q", a, tt.events, tt.says)
			}
		})
	}
	// The holder's grant overlapped by another's is a double grant, and
	// that says it: no revocation during its release besides.
	v := judge(t, ModelLease, []history.Event{ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 1e9), ev(2, inv, A, "k", 1e9), ev(2, ok, A, "k", 1.5e9),
		ev(1, inv, R, "k", 2e9), withError(ev(1, fail, R, "k", 4e9), "not held")})
	if len(v.Anomalies) != 0 || v.Classes[DoubleGrantHeldAtOnce] != 1 || v.Classes[Revoked] != 1 {
		t.Fatalf("classes %v, anomalies %+v: want a double grant, revoked, no anomaly", v.Classes, v.Anomalies)
	}
}

// Lock-loss latency on hand-built histories: from the server freeing the
// lock (the next grant to another client during the tenure, or the lease's
// end as the holder believed it, whichever came first) to the holder's
// lost signal or failed extend.
func TestLockLossLatency(t *testing.T) {
	inv, ok, fail, info := history.Invoke, history.OK, history.Fail, history.Info
	lost := func(proc int, t int64) history.Event { return ev(proc, info, history.Lost, "k", t) }
	ext := func(proc int, typ history.Type, t int64) history.Event { return ev(proc, typ, history.Extend, "k", t) }
	tests := []struct {
		name    string
		evs     []history.Event
		told    []LossSample // Key, Proc, Freed, By, Told, Latency, Events compared
		notTold int
	}{
		{"lease ended before the next grant", []history.Event{
			ev(0, inv, A, "k", 0), withValidUntil(ev(0, ok, A, "k", 10), 100),
			ev(1, inv, A, "k", 20), withValidUntil(ev(1, ok, A, "k", 110), 300),
			lost(0, 150), ev(0, inv, R, "k", 160), withError(ev(0, fail, R, "k", 161), "not held"),
		}, []LossSample{{Key: "k", Proc: 0, Freed: 100, By: "lease end", Told: 150, Latency: 50, Events: []int64{1, 4}}}, 0},
		{"a session with no lease end: the next grant freed it", []history.Event{
			ev(0, inv, A, "k", 0), ev(0, ok, A, "k", 10),
			ev(1, inv, A, "k", 20), ev(1, ok, A, "k", 110), lost(0, 150), ev(0, inv, R, "k", 160), ev(0, ok, R, "k", 161),
		}, []LossSample{{Key: "k", Proc: 0, Freed: 110, By: "grant to client 1", Told: 150, Latency: 40, Events: []int64{1, 3, 4}}}, 0},
		{"a renewal moved the lease end; an extend answered not held told it", []history.Event{
			ev(0, inv, A, "k", 0), withValidUntil(ev(0, ok, A, "k", 10), 100),
			ext(0, inv, 40), withValidUntil(ext(0, ok, 50), 150),
			ev(1, inv, A, "k", 60), ev(1, ok, A, "k", 160),
			ext(0, inv, 165), withError(ext(0, fail, 170), "extend k: not held"), ev(0, inv, R, "k", 180), ev(0, ok, R, "k", 181),
		}, []LossSample{{Key: "k", Proc: 0, Freed: 150, By: "lease end", Told: 170, Latency: 20, Events: []int64{1, 7}}}, 0},
		{"told before the lock was freed: negative", []history.Event{
			ev(0, inv, A, "k", 0), withValidUntil(ev(0, ok, A, "k", 10), 1000), lost(0, 500), ev(0, inv, R, "k", 600), ev(0, ok, R, "k", 601),
			ev(1, inv, A, "k", 650), ev(1, ok, A, "k", 700),
		}, []LossSample{{Key: "k", Proc: 0, Freed: 1000, By: "lease end", Told: 500, Latency: -500, Events: []int64{1, 2}}}, 0},
		{"taken away, never told: a double grant, and a release answered not held", []history.Event{
			ev(0, inv, A, "k", 0), ev(0, ok, A, "k", 10), ev(1, inv, A, "k", 20), ev(1, ok, A, "k", 30),
			ev(0, inv, R, "k", 40), ev(0, ok, R, "k", 41),
			ev(1, inv, R, "k", 50), withError(ev(1, fail, R, "k", 60), "not held"),
		}, nil, 2},
		{"lost with nothing to say when the lock was freed: no sample", []history.Event{
			ev(0, inv, A, "k", 0), ev(0, ok, A, "k", 10), lost(0, 50), ev(0, inv, R, "k", 60), ev(0, ok, R, "k", 61),
		}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(t, ModelLease, tt.evs)
			if !reflect.DeepEqual(v.LockLoss.Told, tt.told) || v.LockLoss.NotTold != tt.notTold {
				t.Fatalf("lock loss %+v, want told %+v, not told %d", v.LockLoss, tt.told, tt.notTold)
			}
		})
	}
}

package matrix_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

func shippedExpectations(t *testing.T) matrix.Expectations {
	t.Helper()
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	return matrix.NewExpectations(m, reg)
}

func TestKnownOrNew(t *testing.T) {
	e := shippedExpectations(t)
	reg := all.Registry()
	get := func(name string) impls.Approach {
		a, err := reg.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// An approach the matrix never heard of, as one from a file is: a
	// TTL lock on Redis.
	stranger := impls.Approach{Name: "from-a-file", Server: impls.Redis, Nodes: 1, Caps: impls.Capabilities{TTL: true, Renewal: true}, Safe: true}
	mutex := workload.Spec{Kind: workload.Mutex}
	counter := workload.Spec{Kind: workload.Counter}
	fenced := workload.Spec{Kind: workload.Counter, Fenced: true}
	for _, tc := range []struct {
		name     string
		a        impls.Approach
		kinds    []string
		w        workload.Spec
		class    verdict.Outcome
		known    bool
		whyMatch string
	}{
		{"a pause past the TTL is Kleppmann's", get("redis-setnx-px-lua"), []string{"client-pause"}, counter, verdict.DoubleGrantOutlived, true, "client-pause, rule cap:ttl"},
		{"its lost update follows from the double grant", get("redis-setnx-px-lua"), []string{"client-pause"}, counter, verdict.LostUpdate, true, "client-pause"},
		{"slow replies never make a second holder", get("redis-setnx-px-lua"), []string{"slow-replies"}, mutex, verdict.DoubleGrantBothValid, false, "slow-replies, rule *, expects safe"},
		{"a restart without persistence loses the key", get("redis-setnx-px-lua"), []string{"server-restart", "drop-replies"}, mutex, verdict.DoubleGrantBothValid, true, "server-restart"},
		{"a kill is a restart with a downtime", get("redis-setnx-px-lua"), []string{"server-kill"}, mutex, verdict.DoubleGrantBothValid, true, "server-restart"},
		{"no column of these faults predicts both valid", get("redis-setnx-px-lua"), []string{"client-pause", "drop-replies"}, counter, verdict.DoubleGrantBothValid, false, "client-pause"},
		{"a holder outliving its lease is the hazard of every lease", get("redis-setnx-px-lua"), []string{"server-pause"}, mutex, verdict.DoubleGrantOutlived, true, "Kleppmann"},
		{"a lock without expiry cannot outlive a lease", get("redis-setnx"), []string{"server-pause"}, mutex, verdict.DoubleGrantOutlived, false, "no rule"},
		{"an unsafe approach is unsafe under anything", get("redis-get-set"), []string{"partition"}, mutex, verdict.DoubleGrantBothValid, true, "none, rule unsafe"},
		{"a fenced store must lose no update", get("etcd-lease"), []string{"client-pause"}, fenced, verdict.LostUpdate, false, "forbidden by client-pause-fenced"},
		{"the fenced pause still outlives", get("etcd-lease"), []string{"client-pause"}, fenced, verdict.DoubleGrantOutlived, true, "client-pause-fenced"},
		{"an approach from a file, by its capabilities", stranger, []string{"server-clock"}, mutex, verdict.DoubleGrantBothValid, true, "server-clock-jump, rule cap:ttl"},
		{"an approach from a file, nothing predicts", stranger, []string{"slow-replies"}, mutex, verdict.DoubleGrantBothValid, false, "slow-replies, rule *"},
		{"a lock nothing expires stays stuck once its holder is gone", get("redis-setnx"), []string{"drop-replies"}, mutex, verdict.Blocked, true, "declares no expiry"},
		{"a TTL lock stuck under lost replies is new", get("redis-setnx-px-lua"), []string{"drop-replies"}, mutex, verdict.Blocked, false, "no rule"},
		{"a run with no fault says so", get("redis-setnx-px-lua"), nil, mutex, verdict.DoubleGrantBothValid, false, "under no fault;"},
		{"a phantom release is never predicted", get("redis-setnx-px-lua"), []string{"client-pause"}, mutex, verdict.PhantomRelease, false, "no rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := e.Judge(tc.a, tc.kinds, tc.w, tc.class)
			if j.Known != tc.known {
				t.Fatalf("known = %v, want %v: %s", j.Known, tc.known, j.Why)
			}
			if !strings.Contains(j.Why, tc.whyMatch) {
				t.Errorf("why %q does not name %q", j.Why, tc.whyMatch)
			}
		})
	}
}

// Predict marks what nothing predicts of a case; a double grant the case's
// own expectation names brings its consequences with it.
func TestPredict(t *testing.T) {
	e := shippedExpectations(t)
	reg := all.Registry()
	a, err := reg.Get("mysql-insert-delete-replicated")
	if err != nil {
		t.Fatal(err)
	}
	mutex := workload.Spec{Kind: workload.Mutex}
	kinds := []string{"partition", "db-failover"}
	for _, tc := range []struct {
		name        string
		expect      []verdict.Outcome
		unpredicted []verdict.Outcome
		predicted   []verdict.Outcome
	}{
		{"the case expects a double grant", []verdict.Outcome{verdict.DoubleGrantBothValid}, []verdict.Outcome{verdict.PhantomRelease}, []verdict.Outcome{verdict.Revoked, verdict.LostUpdate}},
		{"the case expects none", []verdict.Outcome{verdict.Blocked}, []verdict.Outcome{verdict.Revoked, verdict.DoubleGrantBothValid}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := e.Predict(verdict.Expectation{Outcomes: tc.expect}, a, kinds, mutex)
			for _, o := range tc.unpredicted {
				if x.Unpredicted[o] == "" {
					t.Errorf("%s predicted", o)
				}
			}
			for _, o := range tc.predicted {
				if why, ok := x.Unpredicted[o]; ok {
					t.Errorf("%s unpredicted: %s", o, why)
				}
			}
		})
	}
}

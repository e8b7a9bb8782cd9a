package explore

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

func shippedExpectations(t *testing.T) Expectations {
	t.Helper()
	reg := all.Registry()
	m, err := matrix.Load(matrix.Shipped, reg)
	if err != nil {
		t.Fatal(err)
	}
	return NewExpectations(m, reg)
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

// A known class is queued to run again without the faults whose rules
// predicted it, once per set of faults left, at most maxUnmask times, and
// never with no fault left.
func TestUnmaskingIsQueuedOnce(t *testing.T) {
	e := &explorer{tried: map[string]int{}}
	srch := &Search{Approach: "a"}
	clock := Fault{Kind: "server-clock", Params: []Param{{"offset", "3s"}}, At: time.Second, For: time.Second}
	pause := Fault{Kind: "client-pause", Target: chaos.Selector{Client: chaos.ClientRandom}, At: 2 * time.Second, For: time.Second}
	kill := Fault{Kind: "server-kill", At: 2 * time.Second, For: time.Second}
	s := Schedule{Approach: "a", Duration: 5 * time.Second, Faults: []Fault{clock, pause}}
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, s, []string{"server-clock"}, 1)
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, s, []string{"server-clock"}, 2) // the same again
	if len(e.unmasks) != 1 || len(e.unmasks[0].s.Faults) != 1 || e.unmasks[0].s.Faults[0].Kind != "client-pause" || e.unmasks[0].run != 1 {
		t.Fatalf("queued %+v", e.unmasks)
	}
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, Schedule{Faults: []Fault{clock}}, []string{"server-clock"}, 3)
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, s, nil, 4) // the hazard of every lease: nothing to drop
	if len(e.unmasks) != 1 {
		t.Fatalf("queued with nothing left, or nothing to drop: %d", len(e.unmasks))
	}
	// server-kill speaks as server-restart.
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, Schedule{Faults: []Fault{kill, pause}}, []string{"server-restart"}, 5)
	if len(e.unmasks) != 2 || e.unmasks[1].s.Faults[0].Kind != "client-pause" {
		t.Fatalf("server-kill not dropped for a server-restart rule: %+v", e.unmasks)
	}
	for i := range 5 {
		p := pause
		p.At = time.Duration(i+3) * time.Second
		e.queueUnmask(srch, verdict.DoubleGrantBothValid, Schedule{Faults: []Fault{clock, p}}, []string{"server-clock"}, 6+i)
	}
	if len(e.unmasks) != maxUnmask {
		t.Errorf("%d unmaskings of one class, want at most %d", len(e.unmasks), maxUnmask)
	}
}

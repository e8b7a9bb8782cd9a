package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/checker"
)

func TestWriteVerdict(t *testing.T) {
	violations := func(n int) []checker.Violation {
		var out []checker.Violation
		for i := range n {
			out = append(out, checker.Violation{Kind: checker.LostUpdate, Text: fmt.Sprintf("update %d lost", i)})
		}
		return out
	}
	keys := func(n, bad int) []checker.KeyResult {
		var out []checker.KeyResult
		for i := range n {
			r := checker.KeyResult{Key: fmt.Sprintf("k%d", i), Result: porcupine.Ok}
			if i < bad {
				r.Result = porcupine.Illegal
			}
			out = append(out, r)
		}
		return out
	}
	l := Limits{AllKeys: 2, Keys: 3, Violations: 2}
	tests := []struct {
		name    string
		v       checker.Verdict
		want    []string
		notWant []string
	}{
		{"clean", checker.Verdict{Events: 4, Keys: 1, Linearizable: checker.LinYes, Linear: keys(1, 0)},
			[]string{"h: 4 events, 1 keys\n", "  key k0: linearizable", "verdict: OK (linearizable"}, nil},
		{"linearizability skipped", checker.Verdict{Linearizable: checker.LinSkipped},
			[]string{"verdict: OK (no double grant, no resource anomaly; linearizability not checked)"}, nil},
		{"violations cut at the limit", checker.Verdict{Linearizable: checker.LinYes, Violations: violations(5),
			Classes: map[checker.Class]int{checker.LostUpdate: 5}},
			[]string{"  LOST UPDATE: update 1 lost\n  ... and 3 more\n", "verdict: VIOLATION: 5 lost update (linearizable: yes)"},
			[]string{"update 2 lost"}},
		{"many keys: the failing ones and a count", checker.Verdict{Linearizable: checker.LinNo, Linear: keys(5, 1),
			Classes: map[checker.Class]int{}},
			[]string{"  key k0: NOT linearizable", "  4 of 5 keys linearizable", "verdict: VIOLATION"},
			[]string{"key k1:"}},
		{"too many failing keys", checker.Verdict{Linearizable: checker.LinNo, Linear: keys(5, 5), Classes: map[checker.Class]int{}},
			[]string{"  key k2: NOT", "  ... 2 more keys", "  0 of 5 keys linearizable"}, []string{"key k3:"}},
		{"the model named; a lock with no key", checker.Verdict{Model: checker.ModelMutex, Linearizable: checker.LinYes,
			Linear: []checker.KeyResult{{Result: porcupine.Ok}}},
			[]string{"h: 0 events, 0 keys\nmodel: mutex (Knossos's: no expiry; a holder holds until a release of its own succeeds)\n",
				"  the lock: linearizable"}, []string{"key :"}},
		{"revocations during a release: reported, no violation", checker.Verdict{Model: checker.ModelLease, Linearizable: checker.LinYes,
			Anomalies: []checker.Violation{{Kind: checker.RevokedInRelease, Text: "taken while releasing"}, {Kind: checker.RevokedInRelease, Text: "again"}},
			LockLoss:  checker.LockLoss{Told: []checker.LossSample{{Latency: 1500 * time.Millisecond}}, NotTold: 1}},
			[]string{"model: lease (", "  REVOKED DURING RELEASE: taken while releasing\n  REVOKED DURING RELEASE: again\n",
				"  lock loss: 1 holder told 1.500 s after the server freed the lock; 1 more lost it untold\n",
				"verdict: OK (linearizable, no double grant, no resource anomaly; 2 revoked during release, no violation)"}, nil},
		{"violations and revocations", checker.Verdict{Linearizable: checker.LinNo,
			Violations: []checker.Violation{{Kind: checker.DoubleGrantOutlived, Text: "two"}},
			Anomalies:  []checker.Violation{{Kind: checker.RevokedInRelease, Text: "taken"}}},
			[]string{"verdict: VIOLATION: 1 double grant: holder outlived its lease (linearizable: no; 1 revoked during release, no violation)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteVerdict(&b, "h", tt.v, l); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestAddVerdict(t *testing.T) {
	v := checker.Verdict{Linearizable: checker.LinNo, RefusedWrites: 2,
		DoubleGrants: []checker.DoubleGrant{{Kind: checker.OutlivedLease}},
		Violations: []checker.Violation{{Kind: checker.DoubleGrantOutlived, Text: "two holders"}, {Kind: checker.LostUpdate, Text: "lost"},
			{Kind: checker.LostUpdate, Text: "lost again"}},
		Linear: []checker.KeyResult{{Key: "k", HTML: "/r/linearizability/k.html"}}}
	var r Run
	r.AddVerdict(v, "/r", Limits{Violations: 2})
	want := []string{"double grant: holder outlived its lease: two holders", "lost update: lost", "... and 1 more"}
	if strings.Join(r.Violations, "|") != strings.Join(want, "|") {
		t.Errorf("violations %q, want %q", r.Violations, want)
	}
	if r.DoubleGrants != 1 || r.ViolationCount != 3 || r.ViolationKinds[checker.LostUpdate] != 2 || r.Linearizable != checker.LinNo ||
		r.RefusedStaleRequests != 2 || r.Safe() {
		t.Errorf("counts not copied: %+v", r)
	}
	if len(r.Artifacts) != 1 || r.Artifacts[0] != "linearizability/k.html" {
		t.Errorf("artifacts %q, want the visualization relative to the results folder", r.Artifacts)
	}
	if r.Model != "" || r.AnomalyCount != 0 || r.AnomalyKinds != nil || r.LockLoss != nil || r.OtherAnomalies() != 2 {
		t.Errorf("a verdict with no model, anomaly or loss: %+v", r)
	}
}

// A revocation during a release is its own class in results.json, counted
// among the other anomalies with its words, and leaves the run safe; the
// model and the lock-loss latency are kept.
func TestAddVerdictRevocationsAndLockLoss(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	v := checker.Verdict{Model: checker.ModelLease, Linearizable: checker.LinYes,
		Anomalies: []checker.Violation{{Kind: checker.RevokedInRelease, Text: "granted while the release was in flight"},
			{Kind: checker.RevokedInRelease, Text: "no grant meanwhile"}},
		LockLoss: checker.LockLoss{NotTold: 2, Told: []checker.LossSample{{Latency: ms(300)}, {Latency: ms(-100)}, {Latency: ms(1200)}}}}
	var r Run
	r.DoubleGrants, r.ViolationCount = 0, 0
	r.AddVerdict(v, "/r", Limits{Violations: 10})
	if r.Model != checker.ModelLease || r.AnomalyCount != 2 || r.AnomalyKinds[checker.RevokedInRelease] != 2 || !r.Safe() || r.OtherAnomalies() != 2 {
		t.Fatalf("run %+v", r)
	}
	if want := "revoked during release: granted while the release was in flight"; len(r.Anomalies) != 2 || r.Anomalies[0] != want {
		t.Fatalf("anomalies %q, want %q first", r.Anomalies, want)
	}
	want := &LockLoss{Told: 3, NotTold: 2, Samples: []float64{-0.1, 0.3, 1.2}, Median: 0.3, Min: -0.1, Max: 1.2}
	if !reflect.DeepEqual(r.LockLoss, want) {
		t.Fatalf("lock loss %+v, want %+v", r.LockLoss, want)
	}
	if s := r.LockLoss.String(); s != "3 holders told 0.300 s after the server freed the lock (median; from 0.100 s before to 1.200 s after); 2 more lost it untold" {
		t.Fatalf("lock loss in words: %q", s)
	}
	b, _ := json.Marshal(r)
	for _, key := range []string{`"model":"lease"`, `"anomaly_count":2`, `"anomaly_kinds":{"revoked during release":2}`, `"lock_loss":{"told":3,"not_told":2,"latencies_s":[-0.1,0.3,1.2],`, `"median_s":0.3`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("results.json lacks %s:\n%s", key, b)
		}
	}
	var out strings.Builder
	PrintRuns(&out, []Run{{Case: "c", Approach: "a", Clients: 1, Status: "as expected", Explanation: "expected safe, observed no violation",
		Model: r.Model, AnomalyCount: r.AnomalyCount, Anomalies: r.Anomalies, LockLoss: r.LockLoss, Linearizable: checker.LinYes}})
	for _, w := range []string{"c: revoked during release: no grant meanwhile\n", "c: lock loss: 3 holders told 0.300 s after the server freed the lock (median;",
		"model: lease (a tenure ends at its release's invocation"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("printed runs lack %q:\n%s", w, out.String())
		}
	}
	// The table counts the revocations among the other anomalies.
	if lines := strings.Split(out.String(), "\n"); len(lines) < 2 || !strings.Contains(lines[1], "  0                2           yes") {
		t.Errorf("table row %q: want 0 double grants, 2 other anomalies", lines[1])
	}
}

// Lock losses of several runs add up, samples and all; none is nil.
func TestMergeLockLoss(t *testing.T) {
	if MergeLockLoss(nil, nil) != nil {
		t.Fatal("no loss in any run must be nil")
	}
	got := MergeLockLoss(&LockLoss{Told: 1, Samples: []float64{2}}, nil, &LockLoss{Told: 2, NotTold: 1, Samples: []float64{3, 1}})
	want := &LockLoss{Told: 3, NotTold: 1, Samples: []float64{1, 2, 3}, Median: 2, Min: 1, Max: 3}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged %+v, want %+v", got, want)
	}
	untold := &LockLoss{NotTold: 1}
	if s := untold.String(); s != "1 holder lost the lock untold" {
		t.Fatalf("%q", s)
	}
	if b, _ := json.Marshal(untold); string(b) != `{"told":0,"not_told":1}` {
		t.Fatalf("no holder told, yet %s", b) // a median of 0 would read as told at once
	}
	early := MergeLockLoss(&LockLoss{Told: 1, Samples: []float64{-0.774}})
	if s := early.String(); s != "1 holder told 0.774 s before the server freed the lock" {
		t.Fatalf("%q", s)
	}
}

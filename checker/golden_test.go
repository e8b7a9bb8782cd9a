package checker

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/locklab/locklab/history"
)

// golden reads a history of testdata and judges it under model.
func golden(t *testing.T, file string, model Model) Verdict {
	t.Helper()
	path := filepath.Join("testdata", file)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := New(model, true)
	if err := history.ReadFileFormat(f, "", path, func(ev history.Event) error { c.Add(ev); return nil }); err != nil {
		t.Fatal(err)
	}
	v, err := c.Verdict(context.Background(), Options{HTMLDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	classesDeclared(t, v)
	return v
}

// Golden histories, one per class of verdict, in locklab's JSONL, Jepsen's
// EDN and Jepsen's JSON, each judged under both models: each must come out
// exactly so. Every checker fix adds one.
//
// etcd-release-in-flight.edn and .json are one history of our own in the
// shape of Jepsen's etcd lock test (the pattern of elle-cli's
// histories/knossos/mutex/bad/etcd.json, which Knossos's mutex model calls
// invalid): process 3's release takes 2.5 s and fails because its lease is
// gone; 10 ms before it fails, process 0 is granted the lock; process 0's
// own release later fails the same way just after process 1 is granted
// it. Refused releases of non-holders (:not-held), refused acquires of
// holders (:already-held), a partition and acquires never answered are
// there as in Jepsen's. release-not-held.jsonl is a release answered "not
// held" with no grant to anyone while it was in flight, the lock granted
// again after.
func TestGoldenHistories(t *testing.T) {
	tests := []struct {
		file      string
		model     Model
		classes   map[Class]int
		anomalies int // revocations during a release
		linear    LinStatus
	}{
		{"ok-lost-replies.jsonl", ModelLease, map[Class]int{}, 0, "yes"},
		{"ok-lost-replies.jsonl", ModelMutex, map[Class]int{}, 0, "yes"},
		{"double-grant-both-valid.jsonl", ModelLease, map[Class]int{DoubleGrantBothValid: 1}, 0, "no"},
		{"double-grant-both-valid.jsonl", ModelMutex, map[Class]int{DoubleGrantBothValid: 1}, 0, "no"},
		{"double-grant-outlived.jsonl", ModelLease, map[Class]int{DoubleGrantOutlived: 1}, 0, "no"},
		{"double-grant-outlived.jsonl", ModelMutex, map[Class]int{DoubleGrantOutlived: 1}, 0, "no"},
		{"revoked.jsonl", ModelLease, map[Class]int{DoubleGrantOutlived: 1, Revoked: 1}, 0, "no"},
		{"revoked.jsonl", ModelMutex, map[Class]int{DoubleGrantOutlived: 1, Revoked: 1}, 0, "no"},
		{"phantom-release.jsonl", ModelLease, map[Class]int{PhantomRelease: 1}, 0, "no"},
		{"phantom-release.jsonl", ModelMutex, map[Class]int{PhantomRelease: 1}, 0, "no"},
		// A crashed holder's lease runs out; nothing expires under the mutex model.
		{"crash-then-grant.jsonl", ModelLease, map[Class]int{}, 0, "yes"},
		{"crash-then-grant.jsonl", ModelMutex, map[Class]int{DoubleGrantNeverReleased: 1}, 0, "no"},
		{"release-not-held.jsonl", ModelLease, map[Class]int{}, 1, "yes"},
		{"release-not-held.jsonl", ModelMutex, map[Class]int{DoubleGrantNeverReleased: 1}, 0, "no"},
		{"lost-update.jsonl", ModelLease, map[Class]int{LostUpdate: 1}, 0, "yes"},
		{"lost-update.jsonl", ModelMutex, map[Class]int{LostUpdate: 1}, 0, "yes"},
		{"double-grant.edn", ModelMutex, map[Class]int{DoubleGrantHeldAtOnce: 1}, 0, "no"}, // no lease in it: two holders at once, not "both leases valid"
		{"double-grant.edn", ModelLease, map[Class]int{DoubleGrantHeldAtOnce: 1}, 0, "no"},
		{"ok-indeterminate.edn", ModelMutex, map[Class]int{}, 0, "yes"},
		{"ok-indeterminate.edn", ModelLease, map[Class]int{}, 0, "yes"},
		{"ok.json", ModelMutex, map[Class]int{}, 0, "yes"},
		{"ok.json", ModelLease, map[Class]int{}, 0, "yes"},
		{"phantom-release.json", ModelMutex, map[Class]int{PhantomRelease: 1}, 0, "no"},
		{"phantom-release.json", ModelLease, map[Class]int{PhantomRelease: 1}, 0, "no"},
		{"etcd-release-in-flight.edn", ModelMutex, map[Class]int{DoubleGrantNeverReleased: 2}, 0, "no"},
		{"etcd-release-in-flight.edn", ModelLease, map[Class]int{}, 2, "yes"},
		{"etcd-release-in-flight.json", ModelMutex, map[Class]int{DoubleGrantNeverReleased: 2}, 0, "no"},
		{"etcd-release-in-flight.json", ModelLease, map[Class]int{}, 2, "yes"},
		// One renewal invoked after the release's ok and renewed (counted);
		// one in flight across the release, and one refused, are not.
		{"renewed-after-release.jsonl", ModelLease, map[Class]int{RenewedAfterRelease: 1}, 0, "yes"},
		{"renewed-after-release.jsonl", ModelMutex, map[Class]int{RenewedAfterRelease: 1}, 0, "yes"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+string(tt.model), func(t *testing.T) {
			v := golden(t, tt.file, tt.model)
			if v.Model != tt.model || !reflect.DeepEqual(v.Classes, tt.classes) || v.Linearizable != tt.linear || len(v.Anomalies) != tt.anomalies {
				t.Fatalf("model %s, classes %v, linearizable %s, %d anomalies; want %s, %v, %s, %d\n%+v\n%+v",
					v.Model, v.Classes, v.Linearizable, len(v.Anomalies), tt.model, tt.classes, tt.linear, tt.anomalies, v.Violations, v.Anomalies)
			}
			if v.Safe() != (len(tt.classes) == 0) {
				t.Fatalf("Safe() = %v with violations %v", v.Safe(), v.Classes)
			}
			for _, x := range append(v.Violations, v.Anomalies...) {
				if x.Text == "" || len(x.Events) == 0 {
					t.Errorf("a violation or anomaly without its words or events: %+v", x)
				}
			}
			for _, a := range v.Anomalies {
				if a.Kind != RevokedInRelease {
					t.Errorf("anomaly of class %q, want %q", a.Kind, RevokedInRelease)
				}
			}
		})
	}
}

// Under the mutex model the etcd-pattern history is invalid, and the
// violations name, as Knossos would, which grant came while whose lock was
// never released: process 0's grant (event 25) while process 3 held it
// (granted at event 20, its release invoked at 23 failed at 26), then
// process 1's (31). Under the lease model the same events are two
// revocations during a release, no violation.
func TestEtcdPatternNamesItsProof(t *testing.T) {
	for _, file := range []string{"etcd-release-in-flight.edn", "etcd-release-in-flight.json"} {
		t.Run(file, func(t *testing.T) {
			v := golden(t, file, ModelMutex)
			want := [][]int64{{20, 23, 26, 25}, {20, 23, 26, 31}}
			for i, x := range v.Violations {
				if !reflect.DeepEqual(x.Events, want[i]) {
					t.Errorf("violation %d proven by events %v, want %v", i, x.Events, want[i])
				}
			}
			first := v.Violations[0].Text
			for _, s := range []string{"client 0 acquired the lock at 4.743842 s while client 3 held it since 2.080117 s and never released it",
				"its release invoked at 2.248061 s failed at 4.753595 s", "requested lease not found", "a failed operation never happened"} {
				if !strings.Contains(first, s) {
					t.Errorf("the first violation does not say %q:\n%s", s, first)
				}
			}
			lease := golden(t, file, ModelLease)
			wantLease := [][]int64{{20, 23, 25, 26}, {25, 29, 31, 32}}
			for i, a := range lease.Anomalies {
				if !reflect.DeepEqual(a.Events, wantLease[i]) || !strings.Contains(a.Text, "while its release was in flight") {
					t.Errorf("revocation %d: events %v (want %v): %s", i, a.Events, wantLease[i], a.Text)
				}
			}
		})
	}
}

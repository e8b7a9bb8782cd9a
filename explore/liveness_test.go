package explore

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// A run whose servers failed their health check after the faults is a
// sighting of unrecovered, with the check's error as its proof, and a new
// finding: no rule predicts that the servers stay down.
func TestUnrecoveredServersAreAFinding(t *testing.T) {
	const why = "zk-1: not serving"
	for _, tc := range []struct {
		name        string
		unrecovered string
		want        bool
	}{
		{"servers back", "", false},
		{"servers not back", why, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runner.CaseResult{Run: report.Run{Unrecovered: tc.unrecovered}}
			ss := sightingsOf(res, verdict.Freeing{Scale: time.Second})
			if got := shows(ss, verdict.Unrecovered); got != tc.want {
				t.Fatalf("sightings %+v: unrecovered %v, want %v", ss, got, tc.want)
			}
			for _, s := range ss {
				if s.Class == verdict.Unrecovered && !strings.Contains(s.Proof, why) {
					t.Errorf("proof %q does not say why", s.Proof)
				}
			}
		})
	}
	reg := all.Registry()
	e, err := matrix.ShippedFor(reg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := reg.Get("zk-ephemeral")
	if err != nil {
		t.Fatal(err)
	}
	w := workload.Spec{Kind: workload.Mutex, Clients: 2, Keys: 1, TTL: time.Second}
	if j := e.Judge(a, []string{"server-restart", "server-pause"}, w, verdict.Unrecovered); j.Known {
		t.Errorf("unrecovered servers judged known: %s", j.Why)
	}
}

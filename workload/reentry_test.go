package workload

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// A workload with re-entry makes holders acquire the key they hold and
// give it back before their own release; a lock that frees the key at a
// re-entry's release is then seen granting it twice, and one that counts
// holds is not. Without re-entry the bug never shows.
func TestReentryShowsABugInTheReentryPath(t *testing.T) {
	for _, tc := range []struct {
		name        string
		reentry     float64
		freesAll    bool
		wantReenter bool
		wantDouble  bool
	}{
		{"counted holds", 0.5, false, true, false},
		{"a release frees every hold", 0.5, true, true, true},
		{"the same bug, no re-entry asked", 0, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := memlock.NewService(1)
			svc.Reentrant, svc.ReentryFreesAll = true, tc.freesAll
			a := svc.Approach("mem")
			spec := Spec{Clients: 3, Keys: 1, Hold: Dist{Kind: "fixed", A: 2 * time.Millisecond}, TTL: time.Second,
				Duration: 400 * time.Millisecond, Seed: 1, Reentry: tc.reentry}
			var clients []Client
			for i := range spec.Clients {
				own := &clock.Skewable{}
				l, err := a.New(context.Background(), impls.Env{ClientID: i, Clock: own})
				if err != nil {
					t.Fatal(err)
				}
				clients = append(clients, Client{Locker: l, Clock: own})
			}
			rec := &history.Memory{}
			st, err := Run(context.Background(), spec, clients, nil, rec, monotonic{time.Now()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			evs := rec.Events()
			c := checker.New(checker.ModelLease, false)
			marked := 0
			for _, ev := range evs {
				c.Add(ev)
				if ev.Reentry && ev.Type == history.OK {
					marked++
				}
			}
			doubles := len(c.Snapshot().DoubleGrants)
			t.Logf("%d acquires, %d re-entries (%d in the history), %d double grants", st.Acquired, st.Reentries, marked, doubles)
			if got := st.Reentries > 0; got != tc.wantReenter || int64(marked) != st.Reentries {
				t.Errorf("%d re-entries counted, %d recorded; want some: %v", st.Reentries, marked, tc.wantReenter)
			}
			if got := doubles > 0; got != tc.wantDouble {
				t.Errorf("%d double grants; want some: %v", doubles, tc.wantDouble)
			}
		})
	}
}

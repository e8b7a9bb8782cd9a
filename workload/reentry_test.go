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
		loseReplies float64
		wantReenter bool
		wantDouble  bool
	}{
		{"counted holds", 0.5, false, 0, true, false},
		{"a release frees every hold", 0.5, true, 0, true, true},
		{"the same bug, no re-entry asked", 0, true, 0, false, false},
		// A client whose re-entry's reply is lost retires holding the key
		// and says so (a crash: its tenure ends there); its lock is left
		// to its TTL (50 ms here), then granted to the next.
		{"re-entries' replies lost", 1, false, 0.2, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := memlock.NewService(1)
			svc.Reentrant, svc.ReentryFreesAll, svc.LoseReplies = true, tc.freesAll, tc.loseReplies
			a := svc.Approach("mem")
			ttl := time.Second
			if tc.loseReplies > 0 {
				ttl = 50 * time.Millisecond
			}
			spec := Spec{Clients: 3, Keys: 1, Hold: Dist{Kind: "fixed", A: 2 * time.Millisecond}, TTL: ttl,
				Duration: 400 * time.Millisecond, Seed: 1, Reentry: tc.reentry}
			connect := func(ctx context.Context, _, proc int) (Client, error) {
				own := &clock.Skewable{}
				l, err := a.New(ctx, impls.Env{ClientID: proc, Clock: own})
				return Client{Locker: l, Clock: own}, err
			}
			var clients []Client
			for i := range spec.Clients {
				cl, err := connect(context.Background(), i, i)
				if err != nil {
					t.Fatal(err)
				}
				clients = append(clients, cl)
			}
			rec := &history.Memory{}
			st, err := Run(context.Background(), spec, clients, connect, rec, monotonic{time.Now()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			evs := rec.Events()
			c := checker.New(checker.ModelLease, false)
			marked, dropped := 0, 0
			for _, ev := range evs {
				c.Add(ev)
				if ev.Reentry && ev.Type == history.OK {
					marked++
				}
				if ev.F == history.Crash {
					dropped++
				}
			}
			if lost := int(st.Indeterminate - st.CutAtEnd); tc.loseReplies > 0 && (dropped == 0 || dropped > lost) {
				t.Errorf("%d clients retired holding their key, %d outcomes unknown: want some, at most one for each", dropped, lost)
			}
			doubles := len(c.Snapshot().DoubleGrants)
			t.Logf("%d acquires, %d re-entries (%d in the history), %d double grants", st.Acquired, st.Reentries, marked, doubles)
			if got := st.Reentries > 0; got != tc.wantReenter || (tc.loseReplies == 0 && int64(marked) != st.Reentries) {
				t.Errorf("%d re-entries counted, %d recorded; want some: %v", st.Reentries, marked, tc.wantReenter)
			}
			if got := doubles > 0; got != tc.wantDouble {
				t.Errorf("%d double grants; want some: %v", doubles, tc.wantDouble)
			}
		})
	}
}

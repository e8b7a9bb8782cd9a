package workload

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
)

// A client waits its think time after each release before it asks again,
// and while it thinks the key goes to the other client: with a think time
// the two take turns; without one, each asks again at once.
func TestThinkTimeSpacesAClientsCycles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		think Dist
	}{
		{"no think time", Dist{}},
		{"30ms think time", Dist{Kind: "fixed", A: 30 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := memlock.NewService(1).Approach("mem")
			var clients []Client
			for i := range 2 {
				own := &clock.Skewable{}
				l, err := a.New(context.Background(), impls.Env{ClientID: i, Clock: own})
				if err != nil {
					t.Fatal(err)
				}
				clients = append(clients, Client{Locker: l, Clock: own})
			}
			rec := &memRecorder{}
			spec := Spec{Clients: 2, Keys: 1, Hold: Dist{Kind: "fixed", A: 2 * time.Millisecond}, Think: tc.think,
				TTL: time.Second, Duration: 600 * time.Millisecond, Seed: 1}
			if _, err := Run(context.Background(), spec, clients, nil, rec, monotonic{time.Now()}, nil); err != nil {
				t.Fatal(err)
			}
			released := map[int]int64{} // process -> when its last release was answered
			gaps, grants, turns := 0, 0, 0
			last := -1
			for _, ev := range rec.evs {
				switch {
				case ev.F == history.Release && ev.Type == history.OK:
					released[ev.Proc] = ev.T
				case ev.F == history.Acquire && ev.Type == history.Invoke:
					if at, ok := released[ev.Proc]; ok {
						gaps++
						if gap := time.Duration(ev.T - at); gap < tc.think.A {
							t.Fatalf("process %d asked again %v after its release, think time %v", ev.Proc, gap, tc.think.A)
						}
					}
				case ev.F == history.Acquire && ev.Type == history.OK:
					grants++
					if last >= 0 && ev.Proc != last {
						turns++
					}
					last = ev.Proc
				}
			}
			t.Logf("%d grants, %d hand-overs to the other client, %d cycles after a release", grants, turns, gaps)
			if gaps == 0 || grants < 4 {
				t.Fatalf("%d grants, %d cycles after a release: too few to tell", grants, gaps)
			}
			if tc.think.A > 0 && turns < (grants-1)*3/4 {
				t.Errorf("with a think time, %d of %d grants went to the other client: the key did not change hands", turns, grants-1)
			}
		})
	}
}

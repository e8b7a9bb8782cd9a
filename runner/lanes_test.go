package runner

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/workload"
)

// TestParallelLanesAcrossServerOptions: a parallel plan whose cases ask
// for two Redis persistence modes runs each mode's cases on their own
// cluster, server kinds side by side within it; every case runs, results
// come back in plan order, and no process id is used by two cases (they
// share one history).
func TestParallelLanesAcrossServerOptions(t *testing.T) {
	spec := workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex, Hold: workload.Dist{Kind: "fixed", A: time.Millisecond},
		TTL: time.Second, AcquireTimeout: time.Second, Duration: time.Second, Seed: 1}
	var cases []Case
	for _, persistence := range []string{"none", "aof-always"} {
		for _, approach := range []string{"redis-setnx-px-lua", "zk-sequential"} {
			a, err := serverRegistry().Get(approach)
			if err != nil {
				t.Fatal(err)
			}
			c := Case{Name: approach + "-" + persistence, Approach: a, Workload: spec, Record: true,
				Servers: ServerOptions{RedisPersistence: persistence}}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			cases = append(cases, c)
		}
	}
	var clusters atomic.Int32
	logf := func(format string, args ...any) {
		if strings.HasPrefix(format, "cluster ready") {
			clusters.Add(1)
		}
	}
	out, err := (&Runner{Parallel: true, Log: logf}).Run(context.Background(), Plan{Kind: "test", Cases: cases, ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if n := clusters.Load(); n != 2 {
		t.Fatalf("%d clusters started, want one per persistence mode (2)", n)
	}
	if len(out.Results.Runs) != len(cases) {
		t.Fatalf("%d runs, want %d", len(out.Results.Runs), len(cases))
	}
	for i, r := range out.Results.Runs {
		if r.Case != cases[i].Name || r.Acquired == 0 {
			t.Fatalf("run %d: %s with %d grants, want %s with some", i, r.Case, r.Acquired, cases[i].Name)
		}
	}
	evs, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	keyOf := map[int]string{}
	for _, e := range evs {
		if e.F != history.Acquire && e.F != history.Release {
			continue
		}
		if k, ok := keyOf[e.Proc]; ok && k != e.Key {
			t.Fatalf("process %d worked on %s and on %s: two cases shared a process id", e.Proc, k, e.Key)
		}
		keyOf[e.Proc] = e.Key
	}
	if len(keyOf) < 2*len(cases) {
		t.Fatalf("%d process ids for %d cases of 2 clients", len(keyOf), len(cases))
	}
}

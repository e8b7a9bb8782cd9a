package runner

import (
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// A holder killed while holding: a TTL lock comes free after the TTL; a
// lock without expiry never does.
func TestClientCrashFreesTTLLockButNotNoExpiryLock(t *testing.T) {
	for _, tt := range []struct {
		approach string
		want     verdict.Expectation
	}{
		{"redis-setnx-px-lua", verdict.Expect("test", verdict.Safe)},
		{"redis-setnx", verdict.Expect("test", verdict.Safe, verdict.Blocked)},
	} {
		t.Run(tt.approach, func(t *testing.T) {
			spec := workload.Spec{Clients: 2, Hold: workload.Dist{Kind: "fixed", A: 10 * time.Millisecond},
				TTL: 500 * time.Millisecond, AcquireTimeout: time.Second, Duration: 4 * time.Second, Seed: 1}
			c := faultCase(t, tt.approach, spec,
				step(t, "client-crash", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, time.Second, 0, nil))
			c.Expect = tt.want
			out, evs := runFaultCase(t, c)
			if v := out.Verdicts[0]; v.Status != verdict.Agrees {
				t.Fatalf("%s: %s", v.Status, v.Text)
			}
			// A holder that let go just before the kill landed is not the
			// crash asked for: the next holder is crashed too (at most 3).
			crashes := countF(evs, history.Crash)
			if crashes < 1 || crashes > 3 {
				t.Fatalf("want 1 to 3 crash events, history has %d", crashes)
			}
			if r := out.Results.Runs[0]; r.Crashed != int64(crashes) || r.Replaced < 1 {
				t.Fatalf("crashed=%d (history: %d) replaced=%d: every killed worker must be counted and replaced",
					r.Crashed, crashes, r.Replaced)
			}
			// The replacement records under a new process id.
			if procs := procsOf(evs); len(procs) < 3 {
				t.Fatalf("process ids %v: the replacement must record under a new one", procs)
			}
		})
	}
}

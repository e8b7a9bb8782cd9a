package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// Server-side faults on real servers: what a lock survives of its server
// restarting, its clock jumping, its primary failing over. Each case must
// show its outcome within its duration, or the test fails: a double grant
// that never happens is a failure, not a pass.

// serverCase is faultCase (clients as worker processes: a client retired
// after a reset connection is replaced by a process that keeps trying to
// connect while its server is down) with the given Redis persistence.
func serverCase(t *testing.T, approach, persistence string, spec workload.Spec, expect verdict.Expectation, faults ...chaos.Step) Case {
	t.Helper()
	c := faultCase(t, approach, spec, faults...)
	c.Servers = persisting(t, persistence)
	c.Expect = expect
	return c
}

// agrees runs c until it is decided (three tries at most: an undecided run
// says the fault never met what it was aimed at, as a restart over only
// after the hold it struck had ended, 2.3 s for an embedded Redis at a
// load of 19) and fails unless it came out as expected.
func agrees(t *testing.T, c Case) *Outcome {
	t.Helper()
	// Undecided, or an expected violation missed while a client was being
	// replaced (its acquire indeterminate under load, the waiter the case
	// needed gone as the fault came): the case did not run as written.
	out, _ := rerun(t, c, func(out *Outcome, _ []history.Event) string {
		v, r := out.Verdicts[0], out.Results.Runs[0]
		if v.Status != verdict.Undecided && !(v.Status == verdict.Contradicts && v.Missed && r.Replaced > 0) {
			return ""
		}
		return fmt.Sprintf("%s (%s; %d clients replaced)", v.Status, v.Text, r.Replaced)
	})
	if v := out.Verdicts[0]; v.Status != verdict.Agrees {
		r := out.Results.Runs[0]
		t.Fatalf("%s: %s: %s\nacquired %d, not acquired %d, indeterminate %d, errors %d (first: %s), replaced %d; faults %+v",
			c.Name, v.Status, v.Text, r.Acquired, r.NotAcquired, r.Indeterminate, r.Errors, r.FirstError, r.Replaced, r.Faults)
	}
	return out
}

// when fires a step as soon as some client holds key 0, not before at.
func when(s chaos.Step) chaos.Step {
	s.When = &chaos.When{Holding: "0"}
	return s
}

var (
	bothValid = verdict.Expect("test", verdict.DoubleGrantBothValid)
	// noDoubleGrant stands for "safe" in these tests until the checker's
	// rework lands: today an indeterminate acquire (a reset connection when
	// the server dies under a waiting client) must take effect in the
	// linearizability model, so a history with no overlap of holders can
	// still come out "non-linearizable". The shipped scenarios say [safe].
	noDoubleGrant = verdict.Expectation{Forbidden: []verdict.Outcome{verdict.DoubleGrant}, Why: "test"}
)

// A single Redis node without persistence restarted under a holder: it
// comes back empty and grants the lock again while the first lease is
// valid. With the AOF fsynced always, the key survives.
func TestRedisRestartWhileHeld(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	spec := workload.Spec{Clients: 3, Hold: workload.Dist{Kind: "uniform", A: 2 * time.Second, B: 2500 * time.Millisecond},
		TTL: 10 * time.Second, AcquireTimeout: 3 * time.Second, Duration: 4 * time.Second, Seed: 1}
	for _, tc := range []struct {
		persistence string
		expect      verdict.Expectation
	}{{"none", bothValid}, {"aof-always", noDoubleGrant}} {
		t.Run(tc.persistence, func(t *testing.T) {
			t.Parallel() // servers of their own
			agrees(t, serverCase(t, "redis-setnx-px-lua", tc.persistence, spec, tc.expect,
				when(step(t, "server-restart", chaos.Selector{Node: "redis-0"}, 500*time.Millisecond, 0, nil))))
		})
	}
}

// Redlock with each client reaching three of five nodes, redis-2 shared:
// restarting redis-2 under a holder lets the other client form a second
// majority when redis-2 comes back empty; not with AOF always, and not when
// it stays down past the TTL (antirez's delayed restart).
func TestRedlockRestartWhileHeld(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	for _, tc := range []struct {
		name, persistence string
		ttl, hold, delay  time.Duration
		expect            verdict.Expectation
	}{
		{"no-persistence", "none", 10 * time.Second, 2 * time.Second, 0, bothValid},
		{"aof-always", "aof-always", 10 * time.Second, 2 * time.Second, 0, noDoubleGrant},
		{"delayed-restart", "none", 1500 * time.Millisecond, 500 * time.Millisecond, 1700 * time.Millisecond, noDoubleGrant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // servers of their own
			// The waiter tries for the whole case: one that gave up
			// mid-round is indeterminate and replaced, and on a loaded
			// machine its replacement came after the hold the fault
			// struck had ended.
			spec := workload.Spec{Clients: 2, Hold: workload.Dist{Kind: "uniform", A: tc.hold, B: tc.hold + 500*time.Millisecond},
				TTL: tc.ttl, AcquireTimeout: 6 * time.Second, Duration: 6 * time.Second, Seed: 1}
			var opts map[string]any
			if tc.delay > 0 {
				opts = map[string]any{"delay": tc.delay.String()}
			}
			agrees(t, serverCase(t, "redis-redlock", tc.persistence, spec, tc.expect,
				step(t, "partition", chaos.Selector{Client: "0", Nodes: []string{"redis-3", "redis-4"}}, 0, 0, nil),
				step(t, "partition", chaos.Selector{Client: "1", Nodes: []string{"redis-0", "redis-1"}}, 0, 0, nil),
				// After the first holds (taken before the partitions were
				// in place, perhaps on all five nodes) have ended.
				when(step(t, "server-restart", chaos.Selector{Node: "redis-2"}, 2800*time.Millisecond, 0, opts))))
		})
	}
}

// A Redis node's wall clock jumps past the TTL under a holder (libfaketime:
// the plan's server-clock fault starts the servers under it): the key
// expires at once and is granted again while the first lease is valid.
// Single node, and Kleppmann's Redlock case (each client reaches three
// nodes, the shared one's clock jumps).
func TestServerClockJumpWhileHeld(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	jump := map[string]any{"offset": "15s"}
	t.Run("single-node", func(t *testing.T) {
		t.Parallel() // servers of their own
		spec := workload.Spec{Clients: 3, Hold: workload.Dist{Kind: "uniform", A: 2 * time.Second, B: 2500 * time.Millisecond},
			TTL: 10 * time.Second, AcquireTimeout: 3 * time.Second, Duration: 4 * time.Second, Seed: 1}
		agrees(t, serverCase(t, "redis-setnx-px-lua", "", spec, bothValid,
			when(step(t, "server-clock", chaos.Selector{Node: "redis-0"}, 500*time.Millisecond, 0, jump))))
	})
	t.Run("redlock-kleppmann", func(t *testing.T) {
		t.Parallel() // servers of their own
		// The waiter tries for the whole case (as in TestRedlockRestartWhileHeld).
		spec := workload.Spec{Clients: 2, Hold: workload.Dist{Kind: "uniform", A: 2 * time.Second, B: 2500 * time.Millisecond},
			TTL: 10 * time.Second, AcquireTimeout: 6 * time.Second, Duration: 6 * time.Second, Seed: 1}
		agrees(t, serverCase(t, "redis-redlock", "", spec, bothValid,
			step(t, "partition", chaos.Selector{Client: "0", Nodes: []string{"redis-3", "redis-4"}}, 0, 0, nil),
			step(t, "partition", chaos.Selector{Client: "1", Nodes: []string{"redis-0", "redis-1"}}, 0, 0, nil),
			when(step(t, "server-clock", chaos.Selector{Node: "redis-2"}, 2800*time.Millisecond, 0, jump))))
	})
}

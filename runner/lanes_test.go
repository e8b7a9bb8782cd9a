package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// TestParallelLanesAcrossServerOptions: a parallel plan whose cases ask
// for two Redis persistence modes runs each mode's cases on their own
// cluster, server kinds side by side within it; every case runs, results
// come back in plan order, and no process id is used by two cases (they
// share one history).
func TestParallelLanesAcrossServerOptions(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	// A run of a second, but a first acquire may wait out 10 s (Drain) and
	// a ZooKeeper session lasts 4 s: beside two busy loops zk-sequential
	// had no grant in a run of a second with second-long sessions and
	// waits. The test asks that every case ran on its lane, not how fast.
	spec := workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex, Hold: workload.Dist{Kind: "fixed", A: time.Millisecond},
		TTL: 4 * time.Second, AcquireTimeout: 10 * time.Second, Duration: time.Second, Drain: 10 * time.Second, Seed: 1}
	var cases []Case
	for _, persistence := range []string{"none", "aof-always"} {
		for _, approach := range []string{"redis-setnx-px-lua", "zk-sequential"} {
			a, err := serverRegistry().Get(approach)
			if err != nil {
				t.Fatal(err)
			}
			c := Case{Name: approach + "-" + persistence, Approach: a, Workload: spec, Record: true,
				Servers: persisting(t, persistence)}
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
			t.Fatalf("run %d: %s with %d grants (%d refused, %d indeterminate, %d errors: %s), want %s with some",
				i, r.Case, r.Acquired, r.NotAcquired, r.Indeterminate, r.Errors, r.FirstError, cases[i].Name)
		}
	}
	evs, err := history.ReadFile(filepath.Join(out.Dir, history.FileName))
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

// planLanes: a case of a Redis approach that uses one node may run on any
// spare lane, each on its own node after the shared ones; the rest of
// Redis keeps nodes 0..4, or with a second lane may also run on the five
// nodes after the spare ones (not a case whose fault names redis-0);
// other kinds keep one lane each; no spare lanes, no split.
func TestPlanLanes(t *testing.T) {
	mk := func(name string, b impls.Server, nodes int) Case {
		return Case{Name: name, Approach: impls.Approach{Name: name, Server: b, Nodes: nodes}}
	}
	single1, single2 := mk("s1", impls.Redis, 1), mk("s2", impls.Redis, 1)
	multi, zk := mk("redlock", impls.Redis, 0), mk("zk", impls.ZooKeeper, 0)
	// A fault that names redis-0 keeps its case on the shared lane, where
	// a node has that name.
	named := mk("named", impls.Redis, 1)
	named.Faults = []chaos.Step{step(t, "server-restart", chaos.Selector{Node: "redis-0"}, time.Second, 0, nil)}
	cases := []Case{single1, multi, zk, single2, named}
	for _, tc := range []struct {
		name          string
		spare, second int
		zk            int      // more ZooKeeper ensembles
		want          []string // per case: the lanes it may run on, each with its Redis nodes
	}{
		{"split", 2, 0, 0, []string{"s1: redis node 5 @[5], redis node 6 @[6]", "redlock: redis @[0 1 2 3 4]", "zk: zookeeper @[]",
			"s2: redis node 5 @[5], redis node 6 @[6]", "named: redis @[0 1 2 3 4]"}},
		{"a second lane", 2, 1, 0, []string{"s1: redis node 5 @[5], redis node 6 @[6]", "redlock: redis @[0 1 2 3 4], redis, second lane @[7 8 9 10 11]",
			"zk: zookeeper @[]", "s2: redis node 5 @[5], redis node 6 @[6]", "named: redis @[0 1 2 3 4]"}},
		{"no spare lanes", 0, 0, 0, []string{"s1: redis @[]", "redlock: redis @[]", "zk: zookeeper @[]", "s2: redis @[]", "named: redis @[]"}},
		{"ZooKeeper ensembles", 0, 0, 2, []string{"s1: redis @[]", "redlock: redis @[]",
			"zk: zookeeper @[0 1 2], zookeeper, second lane @[3 4 5], zookeeper, lane 3 @[6 7 8]", "s2: redis @[]", "named: redis @[]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lanes, cands := planLanes(cases, layouts{impls.Redis: {shared: 5, spare: tc.spare, second: tc.second},
				impls.ZooKeeper: {shared: 3, second: tc.zk}})
			var got []string
			for i, c := range cases {
				var ls []string
				for _, li := range cands[i] {
					ls = append(ls, fmt.Sprintf("%s @%v", lanes[li].name, lanes[li].nodes.idx))
				}
				got = append(got, c.Name+": "+strings.Join(ls, ", "))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("lanes %q, want %q", got, tc.want)
			}
		})
	}
	if n := spareLanes(cases, impls.Redis, 8); n != 2 {
		t.Fatalf("spareLanes = %d, want 2 (two cases of one-node approaches)", n)
	}
	if n := spareLanes([]Case{single1, single1, single2, single2, single1}, impls.Redis, 4); n != 2 {
		t.Fatalf("spareLanes = %d, want 2 (five cases of one-node approaches, four at once: half)", n)
	}
	if n := spareLanes([]Case{multi, named}, impls.Redis, 8); n != 0 {
		t.Fatalf("spareLanes = %d, want 0 (the one-node approach's fault names redis-0)", n)
	}
}

// secondLanes: a kind whose nodes make lanes gets one more for its
// approaches that use several; a kind whose nodes make an ensemble, one
// per other case that may run at once, at most moreEnsembles.
func TestSecondLanes(t *testing.T) {
	redis, err := cluster.KindOf(impls.Redis)
	if err != nil {
		t.Fatal(err)
	}
	zk, err := cluster.KindOf(impls.ZooKeeper)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind   cluster.Kind
		atOnce int
		want   int
	}{
		{redis, 12, 1},
		{redis, 2, 1},
		{zk, 12, moreEnsembles},
		{zk, 3, 2},
		{zk, 2, 1},
		{zk, 1, 0},
	} {
		if got := secondLanes(tc.kind, tc.atOnce); got != tc.want {
			t.Errorf("secondLanes(%s, %d at once) = %d, want %d", tc.kind.Server, tc.atOnce, got, tc.want)
		}
	}
	// A plan runs one ZooKeeper ensemble.
	zkCase := Case{Name: "zk", Approach: impls.Approach{Name: "zk", Server: impls.ZooKeeper}}
	if l := (Plan{Cases: []Case{zkCase, zkCase, zkCase}}).layouts(true, 12)[impls.ZooKeeper]; l.second != 0 {
		t.Errorf("a plan's ZooKeeper layout %+v, want one ensemble", l)
	}
}

// The scheduler: a case whose faults reach a server has its lane to
// itself; cases whose faults reach only their clients share one, packed
// together; one waiting for a lane to itself keeps new sharers off the
// least shared of its lanes; without ShareServers nobody shares.
func TestSchedulerPlacesCases(t *testing.T) {
	mk := func(name string, faults ...chaos.Step) Case {
		return Case{Name: name, Approach: impls.Approach{Name: "r", Server: impls.Redis, Nodes: 1}, Faults: faults}
	}
	restart := step(t, "server-restart", chaos.Selector{Node: chaos.NodeFirst}, time.Second, 0, nil)
	pause := step(t, "client-pause", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, time.Second, time.Second, nil)
	server1, server2, server3 := mk("server1", restart), mk("server2", restart), mk("server3", restart)
	client1, client2 := mk("client1", pause), mk("client2")
	cases := []Case{server1, client1, server2, client2, server3}
	// In order, all at once: server1 takes a lane whole, client1 the
	// other to share; server2 finds none and wants client1's (the least
	// shared), so client2 may not join it; server3 wants nothing left.
	s := newScheduler(cases, true, layouts{impls.Redis: {shared: 5, spare: 2}})
	var started []string
	start := func(i, li int) { started = append(started, fmt.Sprintf("%s@%s", cases[i].Name, s.lanes[li].name)) }
	waiting := s.pass([]int{0, 1, 2, 3, 4}, 10, start)
	if fmt.Sprint(started) != "[server1@redis node 5 client1@redis node 6]" || fmt.Sprint(waiting) != "[2 3 4]" {
		t.Fatalf("first pass started %v, left %v", started, waiting)
	}
	// server1 ends: server2 takes its lane; client2 packs beside client1.
	s.leave(0, s.cands[0][0])
	started = nil
	waiting = s.pass(waiting, 10, start)
	if fmt.Sprint(started) != "[server2@redis node 5 client2@redis node 6]" || fmt.Sprint(waiting) != "[4]" {
		t.Fatalf("second pass started %v, left %v", started, waiting)
	}
	// server3 wants node 6; client1's twin, waiting behind it, may not
	// start there; once the sharers are gone server3 takes it.
	started = nil
	waiting = s.pass(append(waiting, 1), 10, start)
	if len(started) != 0 || fmt.Sprint(waiting) != "[4 1]" {
		t.Fatalf("third pass started %v, left %v", started, waiting)
	}
	s.leave(1, s.cands[1][1])
	s.leave(3, s.cands[3][1])
	waiting = s.pass(waiting, 10, start)
	if fmt.Sprint(started) != "[server3@redis node 6]" || fmt.Sprint(waiting) != "[1]" {
		t.Fatalf("fourth pass started %v, left %v", started, waiting)
	}
	// A sharer never joins a lane a waiting whole case wants.
	s = newScheduler([]Case{server1, client1}, true, layouts{impls.Redis: {shared: 5, spare: 1}})
	s.lanes[0].sharing = 1 // a sharer runs there
	started = nil
	waiting = s.pass([]int{0, 1}, 10, func(i, li int) { started = append(started, cases[i].Name) })
	if len(started) != 0 || fmt.Sprint(waiting) != "[0 1]" {
		t.Fatalf("with a whole case waiting, started %v, left %v", started, waiting)
	}
	// Without sharing, client cases take lanes whole too.
	s = newScheduler([]Case{client1, client2}, false, layouts{impls.Redis: {shared: 5, spare: 1}})
	started = nil
	waiting = s.pass([]int{0, 1}, 10, func(i, li int) { started = append(started, cases[i].Name) })
	if len(started) != 1 || len(waiting) != 1 {
		t.Fatalf("without sharing, started %v, left %v: want one, the lane whole", started, waiting)
	}
	// free bounds what starts.
	s = newScheduler([]Case{client1, client2}, true, layouts{impls.Redis: {shared: 5, spare: 1}})
	if waiting = s.pass([]int{0, 1}, 1, func(int, int) {}); len(waiting) != 1 {
		t.Fatalf("one free slot left %v waiting, want one", waiting)
	}
}

// TestSpareRedisLanesKeepFaultsApart: in a parallel run, a case that kills
// every Redis node its lane uses for 3 s does not touch the cases beside
// it, Redlock on the shared five and a one-node approach on the other
// spare lane: they run at the same time and never fail, while the killed
// case does.
func TestSpareRedisLanesKeepFaultsApart(t *testing.T) {
	spec := workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex, Hold: workload.Dist{Kind: "fixed", A: time.Millisecond},
		TTL: time.Second, AcquireTimeout: 500 * time.Millisecond, Duration: 5 * time.Second, Seed: 1}
	kill := step(t, "server-kill", chaos.Selector{Node: chaos.NodeAll}, time.Second, 3*time.Second, nil)
	killed := faultCase(t, "redis-setnx-px-lua", spec, kill)
	killed.Processes = false
	beside := []Case{faultCase(t, "redis-redlock", spec), faultCase(t, "redis-setnx-px-del", spec)}
	cases := []Case{killed}
	for _, c := range beside {
		c.Processes = false
		cases = append(cases, c)
	}
	out, err := (&Runner{Parallel: true}).Run(context.Background(), Plan{Kind: "test", Cases: cases, ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// Side by side: each other case was granted while the kill was in
	// force, as the history recorded it (lanes start servers of their own,
	// so on a starved machine one may begin a second after another).
	evs, err := history.ReadFile(filepath.Join(out.Dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	windows := history.FaultWindows(evs)
	if len(windows) != 1 || windows[0].End == 0 {
		t.Fatalf("fault windows %+v, want the one kill, healed", windows)
	}
	kw := windows[0]
	during, _ := spansOf(evs, func(e history.Event) bool {
		return e.F == history.Acquire && e.Type == history.OK && e.T > kw.Start && e.T < kw.End
	})
	for _, c := range cases[1:] {
		if _, granted := during[c.Name]; !granted {
			t.Fatalf("%s was granted nothing while %s's node was killed (%v to %v): they did not run side by side",
				c.Name, killed.Name, time.Duration(kw.Start), time.Duration(kw.End))
		}
	}
	for _, r := range out.Results.Runs {
		failed := r.NotAcquired + r.Indeterminate + r.Errors
		switch {
		case r.Approach == killed.Approach.Name && failed == 0:
			t.Fatalf("%s: no acquire failed while its Redis node was killed for 3 s: the fault missed it", r.Case)
		case r.Approach != killed.Approach.Name && (r.Errors > 0 && !timedOut(r.FirstError) || r.Acquired == 0):
			t.Fatalf("%s: %d acquired, %d failed (%s): another lane's kill reached it", r.Case, r.Acquired, r.Errors, r.FirstError)
		}
	}
	// A kill refuses or drops the connections to its servers: an acquire
	// it reaches ends at once with an error. One that waited out its
	// whole acquire timeout met a held key, as under contention on a
	// starved machine (one of 1,033 Redlock acquires did, under two busy
	// loops): that is no kill.
	own := 0
	for _, f := range earlyFailures(t, out.Dir, spec.AcquireTimeout) {
		if name := strings.Split(f.Key, "/")[1]; name == killed.Name {
			own++
		} else {
			t.Errorf("%s: an acquire failed %v after it was sent, before its %v timeout (%s): another lane's kill reached it",
				name, f.took, spec.AcquireTimeout, f.Error)
		}
	}
	if own == 0 {
		t.Errorf("%s: no acquire failed early while its node was killed: a kill cannot be told from a timeout", killed.Name)
	}
}

// TestZooKeeperEnsemblesKeepFaultsApart: a parallel session starts more
// ZooKeeper ensembles for cases faulting a server, each its own quorum: a
// case that pauses every member of its ensemble for 3 s (no quorum, no
// grant) runs beside two (each pausing a member of its own after), which
// are granted all through the pause. The two run on well past the pause's
// heal and pause their own member after it: on a starved machine the
// pause took 4.3 s to be in place, and its window must fall inside their
// runs, clear of their own faults.
func TestZooKeeperEnsemblesKeepFaultsApart(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	spec := workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex, Hold: workload.Dist{Kind: "fixed", A: 10 * time.Millisecond},
		TTL: 2 * time.Second, AcquireTimeout: 2 * time.Second, Duration: 6 * time.Second, Drain: 10 * time.Second, Seed: 1}
	stop := step(t, "server-pause", chaos.Selector{Node: chaos.NodeAll}, time.Second, 3*time.Second, nil)
	witness := spec
	witness.Duration = 12 * time.Second
	later := step(t, "server-pause", chaos.Selector{Node: chaos.NodeOne}, 11*time.Second, 100*time.Millisecond, nil)
	stopped := faultCase(t, "zk-ephemeral", spec, stop)
	cases := []Case{stopped, faultCase(t, "zk-ephemeral", witness, later), faultCase(t, "zk-sequential", witness, later)}
	for i := range cases {
		cases[i].Name = fmt.Sprintf("%s-%d", cases[i].Name, i)
		cases[i].Processes = false
	}
	stopped = cases[0]
	var nodes atomic.Int32
	logf := func(format string, args ...any) {
		if strings.HasPrefix(format, "cluster ready") {
			nodes.Store(int32(args[1].(int)))
		}
	}
	// A session, as explore runs its cases: three at once get three
	// ensembles.
	ctx := context.Background()
	sess, err := (&Runner{Parallel: true, MaxCases: 3, Log: logf}).Open(ctx, Plan{Kind: "test", Cases: cases, ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, runErr := sess.RunCases(ctx, cases)
	out, err := sess.Close(ctx, runErr)
	if err != nil {
		t.Fatal(err)
	}
	if n := nodes.Load(); n != 9 {
		t.Fatalf("%d ZooKeeper members started, want three ensembles of 3 for three cases faulting their servers", n)
	}
	evs, err := history.ReadFile(filepath.Join(out.Dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var sw *history.Window
	for _, w := range history.FaultWindows(evs) {
		if w.Fault == "server-pause" && sw == nil {
			sw = &w
		}
	}
	if sw == nil || sw.InPlace == 0 || sw.End-sw.Start < int64(3*time.Second) {
		t.Fatalf("no 3 s window of the first pause in the history: %+v", sw)
	}
	// The paused case's grants: from the pause in place to its heal's
	// time (the resume is after), of acquires sent then. The others':
	// any answered while the pause was in force, to its recorded end (on a
	// starved machine the pause takes long to be in place and to be
	// healed, and another case's ensemble may come up late).
	healAt := sw.Start + int64(3*time.Second)
	during, _ := spansOf(evs, func(e history.Event) bool {
		return e.F == history.Acquire && e.Type == history.OK && e.T > sw.InPlace && e.T < sw.End
	})
	sentDuring := map[string]int{}
	sent := map[int]int64{}
	for _, e := range evs {
		if e.F != history.Acquire {
			continue
		}
		if e.Type == history.Invoke {
			sent[e.Proc] = e.T
		}
		if e.Type == history.OK && e.T > sw.InPlace && e.T < healAt && sent[e.Proc] > sw.InPlace {
			sentDuring[strings.Split(e.Key, "/")[1]]++ // nonce/case/key
		}
	}
	for _, c := range cases[1:] {
		if _, granted := during[c.Name]; !granted {
			t.Errorf("%s: no grant in the %v while %s's ensemble was paused (in place at %v, healed at %v): it ran on the same ensemble, or not beside it",
				c.Name, time.Duration(sw.End-sw.InPlace), stopped.Name, time.Duration(sw.InPlace-sw.Start), time.Duration(sw.End-sw.Start))
		}
	}
	for _, r := range out.Results.Runs {
		if r.Case == stopped.Name && sentDuring[r.Case] > 0 {
			t.Errorf("%s: %d acquires sent and granted while every member of its ensemble was paused: the fault missed it", r.Case, sentDuring[r.Case])
		}
	}
}

// timedOut: an error that waited out a deadline. A kill refuses or drops
// connections at once; a starved machine answers late (at a load of 35 a
// replacement Redlock client found "only 0 of 5 nodes answer: ... context
// deadline exceeded").
func timedOut(err string) bool {
	return strings.Contains(err, "deadline exceeded") || strings.Contains(err, "i/o timeout")
}

// earlyFailure is an acquire of a plan's history that failed or went
// unanswered before its timeout: its completion, and how long it took.
type earlyFailure struct {
	history.Event
	took time.Duration
}

// earlyFailures are a plan's acquires that failed or went unanswered
// before their timeout.
func earlyFailures(t *testing.T, dir string, timeout time.Duration) []earlyFailure {
	t.Helper()
	evs, err := history.ReadFile(filepath.Join(dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	sent := map[int]int64{}
	var out []earlyFailure
	for _, e := range evs {
		if e.F != history.Acquire {
			continue
		}
		switch e.Type {
		case history.Invoke:
			sent[e.Proc] = e.T
		case history.Fail, history.Info:
			if took := time.Duration(e.T - sent[e.Proc]); took < timeout {
				out = append(out, earlyFailure{e, took})
			}
		}
	}
	return out
}

// Estimate: one after the other, the sum; in parallel, the scheduler
// played through with each case's cost, groups of server options one
// after the other, each with a start of its servers; cases that end once
// answered cost until their first round of faults ran its course.
func TestEstimate(t *testing.T) {
	mk := func(b impls.Server, nodes int, persistence string, d time.Duration) Case {
		return Case{Approach: impls.Approach{Name: fmt.Sprint(b, nodes), Server: b, Nodes: nodes},
			Workload: workload.Spec{Duration: d}, Servers: persisting(t, persistence)}
	}
	p := Plan{Cases: []Case{
		mk(impls.Redis, 1, "none", 4*time.Second), mk(impls.Redis, 0, "none", 3*time.Second),
		mk(impls.ZooKeeper, 0, "none", 2*time.Second), mk(impls.Redis, 1, "none", 4*time.Second),
		mk(impls.Redis, 0, "aof-always", 5*time.Second), mk(impls.ZooKeeper, 0, "aof-always", 6*time.Second),
	}}
	for _, tc := range []struct {
		parallel bool
		maxCases int
		want     time.Duration
	}{
		// 4+3+2+4+5+6 s plus 1 s each, plus 2 s for each of 2 clusters.
		{false, 0, 34 * time.Second},
		// group none: the two one-node Redis cases on two spare lanes
		// side by side, 5 s; group aof-always: ZooKeeper's lane, 7 s.
		{true, 8, 16 * time.Second},
		// Two at a time: group none's four cases of 5, 4, 3 and 5 s
		// (longest first: 5 and 5, then 4 and 3): 9 s.
		{true, 2, 20 * time.Second},
		// One case at a time: the cases' sum.
		{true, 1, 34 * time.Second},
	} {
		if got := Estimate(p, tc.parallel, tc.maxCases, time.Second, func([]Case) time.Duration { return 2 * time.Second }); got != tc.want {
			t.Errorf("Estimate(parallel %v, %d at once) = %v, want %v", tc.parallel, tc.maxCases, got, tc.want)
		}
	}
	// Ending once answered: a client pause at 1 s for 2 s in a 10 s case
	// expected to show a double grant costs 1+2 s and the tail; expected
	// safe, also the holds of the clients but one (3 x 500 ms).
	a := impls.Approach{Name: "r", Server: impls.Redis, Nodes: 1}
	pause := step(t, "client-pause", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, time.Second, 2*time.Second, nil)
	spec := workload.Spec{Duration: 10 * time.Second, Clients: 4, TTL: time.Second, Hold: workload.Dist{Kind: "fixed", A: 500 * time.Millisecond}}
	unsafe := Case{Approach: a, Workload: spec, Faults: []chaos.Step{pause}, Record: true, Expect: verdict.Expect("", verdict.DoubleGrant)}
	safe := unsafe
	safe.Expect = verdict.Expect("", verdict.Safe)
	blocked := unsafe
	blocked.Expect = verdict.Expect("", verdict.Safe, verdict.Blocked)
	for _, tc := range []struct {
		c    Case
		want time.Duration
	}{{unsafe, 3*time.Second + answerTail}, {safe, 3*time.Second + answerTail + 1500*time.Millisecond}, {blocked, 10 * time.Second}} {
		if got := expectedLength(tc.c, true); got != tc.want {
			t.Errorf("expectedLength(expect %v) = %v, want %v", tc.c.Expect, got, tc.want)
		}
		if got := expectedLength(tc.c, false); got != 10*time.Second {
			t.Errorf("expectedLength(expect %v, not ending early) = %v, want the duration", tc.c.Expect, got)
		}
	}
}

// MaxCases bounds the cases running at once across lanes: one at a time,
// two cases on lanes of their own never overlap; two at a time, they run
// side by side. Two Redis approaches (a spare Redis lane each): which
// servers is not the question, and a ZooKeeper ensemble's start was most
// of the minute the test took with zk-sequential.
func TestMaxCasesBoundsCasesAtOnce(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	spec := workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex, Hold: workload.Dist{Kind: "fixed", A: time.Millisecond},
		TTL: time.Second, AcquireTimeout: time.Second, Duration: 2 * time.Second, Seed: 1}
	var cases []Case
	for _, approach := range []string{"redis-setnx-px-lua", "redis-get-set"} {
		a, err := serverRegistry().Get(approach)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, Case{Name: approach, Approach: a, Workload: spec, Record: true})
	}
	for _, tc := range []struct {
		maxCases int
		overlap  bool
	}{{1, false}, {2, true}} {
		out, err := (&Runner{Parallel: true, MaxCases: tc.maxCases}).Run(context.Background(), Plan{Kind: "test", Cases: cases, ResultsDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		// Each case's span: its first to its last lock event.
		first, last := caseSpans(t, out.Dir, func(e history.Event) bool { return e.F == history.Acquire || e.F == history.Release })
		a, b := cases[0].Name, cases[1].Name
		if _, ok := first[b]; !ok || first[a] == 0 {
			t.Fatalf("%d at once: events of %v, want both cases", tc.maxCases, first)
		}
		overlap := first[a] < last[b] && first[b] < last[a]
		if overlap != tc.overlap {
			t.Errorf("%d at once: cases overlap = %v, want %v", tc.maxCases, overlap, tc.overlap)
		}
	}
}

// caseSpans is, per case, the time of the first and of the last event of
// the run's history that keep accepts.
func caseSpans(t *testing.T, dir string, keep func(history.Event) bool) (first, last map[string]int64) {
	t.Helper()
	evs, err := history.ReadFile(filepath.Join(dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return spansOf(evs, keep)
}

// spansOf is caseSpans of a history already read.
func spansOf(evs []history.Event, keep func(history.Event) bool) (first, last map[string]int64) {
	first, last = map[string]int64{}, map[string]int64{}
	for _, e := range evs {
		if !keep(e) {
			continue
		}
		name := strings.Split(e.Key, "/")[1] // nonce/case/key
		if _, ok := first[name]; !ok {
			first[name] = e.T
		}
		last[name] = e.T
	}
	return first, last
}

// Only the cases that jump a server's clock get servers under libfaketime,
// on a cluster of their own: a ZooKeeper ensemble under it burns most of
// two cores, and the matrix once ran every lane's servers under it because
// one column needed it.
func TestServerClockCasesGetFakeTimeServersOfTheirOwn(t *testing.T) {
	jump := chaos.Step{Fault: chaos.ServerClock{}}
	pause := chaos.Step{Fault: chaos.ServerPause{}}
	zk := impls.Approach{Name: "zk", Server: impls.ZooKeeper}
	cases := []Case{
		{Name: "plain", Approach: zk},
		{Name: "clock", Approach: zk, Faults: []chaos.Step{pause, jump}},
		{Name: "paused", Approach: zk, Faults: []chaos.Step{pause}},
		{Name: "clock-aof", Approach: zk, Faults: []chaos.Step{jump}, Servers: persisting(t, "aof-always")},
	}
	var got []string
	for _, g := range groupsByServers(cases) {
		var names []string
		for _, c := range g {
			names = append(names, c.Name)
		}
		cfg := localConfig([]impls.Server{impls.ZooKeeper}, g[0].ServerOptions())
		got = append(got, fmt.Sprintf("%s fake=%v", strings.Join(names, ","), cfg.FakeTime))
	}
	want := []string{"plain,paused fake=false", "clock fake=true", "clock-aof fake=true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("groups %q, want %q", got, want)
	}
}

// Runs finish in any order when lanes run side by side; put in plan order,
// each keeps its own verdict. Seen: `run --runs 20 --parallel 2` of
// consensus-majority-loss charged zk-ephemeral's one miss to etcd-lease.
func TestInPlanOrderKeepsVerdictsWithRuns(t *testing.T) {
	cases := []Case{{Name: "a-r1"}, {Name: "b-r1"}, {Name: "a-r2"}, {Name: "b-r2"}}
	for _, tc := range []struct {
		name     string
		finished []string
	}{
		{"in order", []string{"a-r1", "b-r1", "a-r2", "b-r2"}},
		{"lanes interleaved", []string{"b-r1", "a-r1", "b-r2", "a-r2"}},
		{"one lane first", []string{"b-r1", "b-r2", "a-r1", "a-r2"}},
		{"reversed", []string{"b-r2", "a-r2", "b-r1", "a-r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []report.Run
			var vs []verdict.Result
			for _, name := range tc.finished {
				runs = append(runs, report.Run{Case: name})
				vs = append(vs, verdict.Result{Text: "verdict of " + name})
			}
			runs, vs = inPlanOrder(cases, runs, vs)
			for i, c := range cases {
				if runs[i].Case != c.Name || vs[i].Text != "verdict of "+c.Name {
					t.Fatalf("position %d: run %s with %q, want %s with its own verdict", i, runs[i].Case, vs[i].Text, c.Name)
				}
			}
		})
	}
}

// TestSharedServersKeepCasesApart: with ShareServers, two cases whose
// faults reach only their own clients run at the same time on the same
// Redis node: one cuts its holder off from the server for 2 s (its own
// proxies), the other pauses nothing. They overlap; the cut reaches the
// first case's clients only: the second never fails an operation.
func TestSharedServersKeepCasesApart(t *testing.T) {
	spec := workload.Spec{Clients: 2, Keys: 1, Kind: workload.Mutex, Hold: workload.Dist{Kind: "fixed", A: 200 * time.Millisecond},
		TTL: time.Second, AcquireTimeout: 2 * time.Second, Duration: 4 * time.Second, Seed: 1}
	cut := step(t, "partition", chaos.Selector{Client: chaos.ClientHolder, Key: "0", Node: chaos.NodeAll}, time.Second, 2*time.Second, nil)
	partitioned := faultCase(t, "redis-setnx-px-lua", spec, cut)
	partitioned.Name, partitioned.Processes, partitioned.Direct = "partitioned", false, false
	calm := faultCase(t, "redis-setnx-px-lua", spec)
	calm.Name, calm.Processes, calm.Direct = "calm", false, false
	cases := []Case{partitioned, calm}
	if !sharesServers(partitioned) || !sharesServers(calm) {
		t.Fatal("a partition of a client's own links must let its case share the servers")
	}
	var clusters atomic.Int32
	logf := func(format string, args ...any) {
		if strings.HasPrefix(format, "cluster ready") {
			clusters.Add(1)
		}
	}
	out, err := (&Runner{Parallel: true, MaxCases: 2, Log: logf}).Run(context.Background(),
		Plan{Kind: "test", Cases: cases, ResultsDir: t.TempDir(), ShareServers: true})
	if err != nil {
		t.Fatal(err)
	}
	first, last := caseSpans(t, out.Dir, func(e history.Event) bool { return e.F == history.Acquire && e.Type == history.OK })
	if first["calm"] > last["partitioned"] || first["partitioned"] > last["calm"] {
		t.Fatalf("the cases did not overlap: calm %v..%v, partitioned %v..%v", time.Duration(first["calm"]), time.Duration(last["calm"]),
			time.Duration(first["partitioned"]), time.Duration(last["partitioned"]))
	}
	for _, r := range out.Results.Runs {
		// A cut shows as operations without an answer, errors, or a
		// release that found the lock gone. An acquire that timed out is
		// not counted: the lock is not fair, and a polling waiter can
		// lose every hand-off to a client that asks again at once.
		failed := r.Indeterminate + r.Errors + r.ReleaseNotHeld
		switch {
		case r.Case == "partitioned" && failed+r.NotAcquired == 0:
			t.Fatalf("partitioned: nothing failed while its holder was cut off for 2 s: the cut missed it")
		case r.Case == "calm" && (r.Errors+r.ReleaseNotHeld > 0 || r.Acquired == 0):
			t.Fatalf("calm: %d acquired, %d failed (not acquired %d, indeterminate %d, errors %d, release not held %d; %s): the other case's cut reached it", r.Acquired, failed, r.NotAcquired, r.Indeterminate, r.Errors, r.ReleaseNotHeld, r.FirstError)
		}
	}
	// An acquire left unknown when its 2 s wait ran out mid-command is
	// contention (a waiter of an unfair lock); a cut leaves one unanswered
	// before its time.
	// Only while the cut was in force: one the end of the run cut short
	// is no cut's.
	evs, err := history.ReadFile(filepath.Join(out.Dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var in history.Window
	for _, w := range history.FaultWindows(evs) {
		if w.Fault == "partition" {
			in = w
		}
	}
	for _, f := range earlyFailures(t, out.Dir, spec.AcquireTimeout) {
		if strings.Split(f.Key, "/")[1] == "calm" && f.T >= in.Start && (in.End == 0 || f.T <= in.End) {
			t.Errorf("calm: an acquire failed %v after it was sent, before its %v timeout, during the other case's cut (%s)",
				f.took, spec.AcquireTimeout, f.Error)
		}
	}
}

// persisting is the server options of Redis nodes persisting as mode says.
func persisting(t testing.TB, mode string) ServerOptions {
	t.Helper()
	if mode == "" { // the servers' default
		return ServerOptions{}
	}
	s, err := cluster.Settings("").With(impls.Redis, "persistence", mode)
	if err != nil {
		t.Fatal(err)
	}
	return ServerOptions{Settings: s}
}

package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/impls/redis"
	"github.com/locklab/locklab/impls/zk"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// workerArg makes this test binary a `locklab worker` (see TestMain): the
// fault tests run real worker processes without building locklab.
const workerArg = "locklab-test-worker"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		if err := fleet.ServeWorker(context.Background(), serverRegistry(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func serverRegistry() *impls.Registry {
	r := impls.NewRegistry()
	redis.Register(r)
	zk.Register(r)
	return r
}

// faultCase is a case of approach on real servers, its clients as worker
// processes, with the given faults.
func faultCase(t *testing.T, approach string, spec workload.Spec, faults ...chaos.Step) Case {
	t.Helper()
	a, err := serverRegistry().Get(approach)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Keys == 0 {
		spec.Keys = 1
	}
	if spec.Kind == "" {
		spec.Kind = workload.Mutex
	}
	c := Case{Name: approach, Approach: a, Workload: spec, Record: true, Processes: true, Faults: faults}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := checkAvailable(c, placement{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// whatWentWrong lists the history's events that did not succeed and the
// faults' events (at most 20), for a verdict that disagreed: "never
// granted" says nothing of why.
func whatWentWrong(evs []history.Event) string {
	var b strings.Builder
	n := 0
	for _, e := range evs {
		if n == 20 {
			b.WriteString("\n  ...")
			break
		}
		if (e.Type == history.OK || e.Type == history.Invoke) && e.F != history.Nemesis {
			continue
		}
		fmt.Fprintf(&b, "\n  t=%d proc=%d %s %s %s %s", e.T, e.Proc, e.Type, e.F, e.Value, e.Error)
		n++
	}
	if n == 0 {
		return fmt.Sprintf(" (%d events, none failed)", len(evs))
	}
	return b.String()
}

func step(t *testing.T, kind string, target chaos.Selector, at, dur time.Duration, opts map[string]any) chaos.Step {
	t.Helper()
	f, err := chaos.New(kind)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) > 0 {
		b, _ := yaml.Marshal(opts)
		if err := yaml.Unmarshal(b, f); err != nil {
			t.Fatal(err)
		}
	}
	return chaos.Step{Fault: f, Target: target, At: chaos.Duration(at), For: chaos.Duration(dur)}
}

func runFaultCase(t *testing.T, c Case) (*Outcome, []history.Event) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Stalls of the lab count from 500 ms: these cases check what a fault
	// makes the lock do, and with three test packages at once (or both
	// cores busy) locklab's probe wakes 0.1-0.2 s late a few times a
	// minute, which makes a violation overlapping it inconclusive by
	// design (a clock jump's double grant, in a loaded run). The monitor
	// at its default keeps its own tests (cmd/locklab/stall_test.go);
	// TestClientPauseIsNotALabStall runs at 500 ms too: its stops last
	// 1.5 s.
	p := Plan{Kind: "test", Cases: []Case{c}, ResultsDir: t.TempDir(), StallThreshold: 500 * time.Millisecond}
	out, err := (&Runner{WorkerArgv: []string{exe, workerArg}}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := history.ReadFile(filepath.Join(out.Dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return out, evs
}

// rerun runs c, and again while again names a reason the run did not test
// what the case was written for (a fault that met nothing, a run left
// undecided), three runs at most; it returns the last run.
func rerun(t *testing.T, c Case, again func(*Outcome, []history.Event) string) (*Outcome, []history.Event) {
	t.Helper()
	for try := 1; ; try++ {
		out, evs := runFaultCase(t, c)
		why := again(out, evs)
		if why == "" || try == 3 {
			return out, evs
		}
		t.Logf("run %d: %s: again", try, why)
	}
}

// A holder paused past its TTL (SIGSTOP of its worker process) is not
// told anything: the lock is granted to another client while it still
// works, and its stale write loses an update. A pause that lands after
// the holder sent its write (a loaded machine delays the SIGSTOP) loses
// nothing, so the holder is paused twice, with holds long enough that a
// pause mostly lands inside one.
func TestClientPausePastTTLGivesOutlivedDoubleGrantAndLostUpdates(t *testing.T) {
	spec := workload.Spec{Clients: 3, Kind: workload.Counter, Hold: workload.Dist{Kind: "uniform", A: 40 * time.Millisecond, B: 80 * time.Millisecond},
		TTL: 500 * time.Millisecond, Duration: 6 * time.Second, Seed: 1}
	pause := step(t, "client-pause", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, time.Second, 2*time.Second, nil)
	pause.Every = chaos.Duration(2500 * time.Millisecond)
	c := faultCase(t, "redis-setnx-px-lua", spec, pause)
	c.Expect = verdict.Expect("test", verdict.DoubleGrantOutlived, verdict.LostUpdate)
	out, evs := runFaultCase(t, c)
	if v := out.Verdicts[0]; v.Status != verdict.Agrees {
		t.Fatalf("%s: %s%s", v.Status, v.Text, whatWentWrong(evs))
	}
	if n := countNemesis(evs, "client-pause"); n != 2 {
		t.Fatalf("%d client-pause injections in the history, want 2", n)
	}
}

// The same pause with a fenced store: the stale holder's write is refused,
// no update is lost. The pause must land before the holder's write, so
// holds are long beside the delay of a SIGSTOP, and the holder is paused
// twice (one pause of 20-40 ms holds once landed after the write on an
// idle machine: no double grant to show).
func TestClientPauseWithFencingRefusesStaleWrites(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	spec := workload.Spec{Clients: 3, Kind: workload.Counter, Hold: workload.Dist{Kind: "uniform", A: 100 * time.Millisecond, B: 200 * time.Millisecond},
		TTL: time.Second, Duration: 10 * time.Second, Seed: 1}
	pause := step(t, "client-pause", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, time.Second, 3500*time.Millisecond, nil)
	pause.Every = chaos.Duration(4500 * time.Millisecond)
	c := faultCase(t, "zk-sequential", spec, pause)
	c.Workload.Fenced = true
	c.Expect = verdict.Expectation{Outcomes: []verdict.Outcome{verdict.DoubleGrant, verdict.StaleWriteRefused},
		Forbidden: []verdict.Outcome{verdict.LostUpdate}}
	out, evs := runFaultCase(t, c)
	if v := out.Verdicts[0]; v.Status != verdict.Agrees {
		t.Fatalf("%s: %s%s", v.Status, v.Text, whatWentWrong(evs))
	}
	// The paused holder's ZooKeeper session expired while it was stopped:
	// it learns it when it wakes (the Lost signal, or its release answered
	// "not held").
	if r := out.Results.Runs[0]; r.ReleaseNotHeld+r.Lost == 0 {
		t.Errorf("the paused holder was never told its session had expired (release not held %d, lost %d)", r.ReleaseNotHeld, r.Lost)
	}
	_ = evs
}

// A partition of one client's own links leaves the other clients
// working: they keep being granted the lock while it is cut off.
func TestPartitionOfOneClientLeavesOthersWorking(t *testing.T) {
	spec := workload.Spec{Clients: 3, Hold: workload.Dist{Kind: "fixed", A: 5 * time.Millisecond},
		TTL: 300 * time.Millisecond, AcquireTimeout: 500 * time.Millisecond, Duration: 4 * time.Second, Seed: 1}
	c := faultCase(t, "redis-setnx-px-lua", spec,
		step(t, "partition", chaos.Selector{Client: "0", Node: chaos.NodeAll}, time.Second, 2*time.Second, nil))
	_, evs := runFaultCase(t, c)
	var win history.Window
	for _, w := range history.FaultWindows(evs) {
		if w.Fault == "partition" {
			win = w
		}
	}
	if win.Start == 0 || win.End == 0 {
		t.Fatalf("no healed partition window in the history")
	}
	if !strings.HasPrefix(win.Target, "client 0") {
		t.Fatalf("partition hit %q, want client 0's links", win.Target)
	}
	grants := map[int]int{}
	for _, ev := range evs {
		if ev.F == history.Acquire && ev.Type == history.OK && ev.T > win.Start+int64(100*time.Millisecond) && ev.T < win.End {
			grants[ev.Proc]++
		}
	}
	if grants[0] != 0 {
		t.Errorf("client 0 was granted the lock %d times while cut off", grants[0])
	}
	if grants[1]+grants[2] < 20 {
		t.Errorf("the other clients were granted the lock %d times in the 2 s partition: they were hit too", grants[1]+grants[2])
	}
}

func countNemesis(evs []history.Event, fault string) int {
	n := 0
	for _, w := range history.FaultWindows(evs) {
		if w.Fault == fault {
			n++
		}
	}
	return n
}

func countF(evs []history.Event, f string) int {
	n := 0
	for _, ev := range evs {
		if ev.F == f {
			n++
		}
	}
	return n
}

func procsOf(evs []history.Event) []int {
	seen := map[int]bool{}
	var out []int
	for _, ev := range evs {
		if ev.Proc >= 0 && !seen[ev.Proc] {
			seen[ev.Proc] = true
			out = append(out, ev.Proc)
		}
	}
	return out
}

// A careful holder (honour-lease) that works past its lease stops when the
// lease runs out by its own clock, so without a fault it never overlaps the
// next holder. Its lease clock set back 5 s while it holds makes it work
// on, believing its lease valid, after the server freed the lock: a double
// grant with both leases valid, caused by the client's clock alone.
func TestClientClockJumpMakesACarefulHolderOverlap(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	spec := workload.Spec{Clients: 2, Hold: workload.Dist{Kind: "uniform", A: 1500 * time.Millisecond, B: 2 * time.Second},
		TTL: time.Second, AcquireTimeout: 5 * time.Second, Duration: 5 * time.Second, Seed: 1, HonourLease: true}
	jump := step(t, "client-clock", chaos.Selector{Client: chaos.ClientHolder, Key: "0"}, 500*time.Millisecond, 0,
		map[string]any{"offset": "-5s"})
	jump.When = &chaos.When{Holding: "0"}
	for _, tc := range []struct {
		name   string
		faults []chaos.Step
		expect verdict.Expectation
	}{
		{"no fault: holders stop in time", nil, verdict.Expect("test", verdict.Safe)},
		{"clock set back: both leases valid", []chaos.Step{jump}, verdict.Expect("test", verdict.DoubleGrantBothValid)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // servers of their own
			c := faultCase(t, "redis-setnx-px-lua", spec, tc.faults...)
			c.Processes = false // the lease clock of a goroutine client is moved in place
			c.Expect = tc.expect
			out, evs := runFaultCase(t, c)
			v := out.Verdicts[0]
			if v.Status != verdict.Agrees {
				t.Fatalf("%s: %s%s", v.Status, v.Text, whatWentWrong(evs))
			}
			if r := out.Results.Runs[0]; r.Acquired < 3 {
				t.Fatalf("%d grants in 5 s: too few to show anything", r.Acquired)
			}
		})
	}
}

// server-isolate is refused before anything starts where it cannot act:
// embedded servers, and the Sentinel topology's containers on the host's
// network; it is accepted for a ZooKeeper ensemble in containers.
func TestServerIsolateAvailability(t *testing.T) {
	reg := serverRegistry()
	isolate := func() chaos.Step {
		return step(t, "server-isolate", chaos.Selector{Node: "leader"}, time.Second, time.Second, nil)
	}
	for _, tc := range []struct {
		approach, mode, refusal string
	}{
		{"zk-sequential", "docker", ""},
		{"zk-sequential", "local", "--cluster docker"},
		{"redis-sentinel-lua", "docker", "host's network"},
	} {
		where := placement{docker: tc.mode == "docker"}
		a, err := reg.Get(tc.approach)
		if err != nil {
			t.Fatal(err)
		}
		err = checkAvailable(Case{Name: tc.approach, Approach: a, Faults: []chaos.Step{isolate()}}, where)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s in %s: %v", tc.approach, tc.mode, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s in %s: err = %v, want a refusal naming %q", tc.approach, tc.mode, err, tc.refusal)
		}
	}
}

// Server faults a server kind cannot take are refused before anything
// starts, by the rules of a started node (cluster.Planned): a clock fault
// on etcd or PostgreSQL once ran to its end with the fault failing when it
// fired, exit 0; a failover outside the Sentinel topology likewise, and a
// db-failover outside a replicated MariaDB.
func TestServerFaultsAServerCannotTakeAreRefusedBeforeTheRun(t *testing.T) {
	reg := all.Registry()
	clockJump := func() chaos.Step {
		return step(t, "server-clock", chaos.Selector{Node: "all"}, time.Second, time.Second, map[string]any{"offset": "40s"})
	}
	failover := func() chaos.Step {
		return step(t, "failover", chaos.Selector{Node: "leader"}, time.Second, time.Second, nil)
	}
	dbFailover := func() chaos.Step {
		return step(t, "db-failover", chaos.Selector{Node: "leader"}, time.Second, time.Second, nil)
	}
	for _, tc := range []struct {
		approach, mode string
		st             chaos.Step
		refusal        string
	}{
		{"redis-setnx-px-lua", "local", clockJump(), ""},
		{"zk-sequential", "docker", clockJump(), ""},
		{"etcd-lease", "local", clockJump(), "vDSO"},
		{"pg-advisory", "docker", clockJump(), "PostgreSQL is not run under libfaketime"},
		{"redis-setnx-px-lua", "external", clockJump(), "external"},
		{"redis-sentinel-lua", "local", failover(), ""},
		{"redis-setnx-px-lua", "local", failover(), "cannot be failed over (only redis-sentinel, run by locklab)"},
		{"mysql-insert-delete", "docker", dbFailover(), "not a node of a replicated MariaDB topology"},
		{"redis-sentinel-lua", "local", dbFailover(), "not a node of a replicated MariaDB topology"},
	} {
		t.Run(tc.approach+"/"+tc.st.Fault.Kind()+"/"+tc.mode, func(t *testing.T) {
			a, err := reg.Get(tc.approach)
			if err != nil {
				t.Fatal(err)
			}
			where := placement{docker: tc.mode == "docker"}
			if tc.mode == "external" {
				where.ext = &cluster.ExternalConfig{Servers: map[impls.Server][]string{a.Server: {"127.0.0.1:6379"}}}
			}
			err = checkAvailable(Case{Name: tc.approach, Approach: a, Faults: []chaos.Step{tc.st}}, where)
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
				t.Errorf("err = %v, want a refusal naming %q", err, tc.refusal)
			}
		})
	}
}

// On the user's servers, a server fault needs the fault commands that do
// it on every node it may pick: refused before the run otherwise, naming
// the node that has none; a node the config does not list is refused too.
func TestUsersServersTakeTheFaultsTheirCommandsDo(t *testing.T) {
	ext := &cluster.ExternalConfig{AllowRemote: true}
	if err := cluster.ParseExternalConfig([]byte(`redis: [10.0.0.1:6379, 10.0.0.2:6379, 10.0.0.3:6379, 10.0.0.4:6379, 10.0.0.5:6379]
fault-commands:
  redis-0:
    pause: docker pause {node}
    resume: docker unpause {node}
    kill: docker kill {node}
    start: docker start {node}
  redis-1:
    pause: docker pause {node}
    resume: docker unpause {node}
`), ext); err != nil {
		t.Fatal(err)
	}
	a, err := all.Registry().Get("redis-redlock")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fault   string
		sel     chaos.Selector
		refusal string
	}{
		{"server-pause", chaos.Selector{Node: "redis-1"}, ""},
		{"server-pause", chaos.Selector{Nodes: []string{"redis-0", "redis-1"}}, ""},
		{"server-pause", chaos.Selector{Node: "all"}, "redis-2 and its fault-commands give no pause or resume command"},
		{"server-restart", chaos.Selector{Node: "redis-0"}, ""},
		{"server-kill", chaos.Selector{Node: "redis-1"}, "redis-1 and its fault-commands give no kill or start command"},
		{"server-isolate", chaos.Selector{Node: "redis-0"}, "no isolate or rejoin command"},
		{"server-pause", chaos.Selector{Node: "redis-9"}, `no redis node "redis-9"`},
		{"server-pause", chaos.Selector{Node: "redis-4"}, "gives it no fault-commands"},
	} {
		t.Run(tc.fault+"/"+tc.sel.String(), func(t *testing.T) {
			c := Case{Name: a.Name, Approach: a, Faults: []chaos.Step{step(t, tc.fault, tc.sel, time.Second, time.Second, nil)}}
			err := checkAvailable(c, placement{ext: ext})
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
				t.Errorf("err = %v, want a refusal naming %q", err, tc.refusal)
			}
		})
	}
}

package explore

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/workload"
)

// profileOf is the profile of a built-in approach as explore makes it,
// with the runner's availability check (pure: no server starts).
func profileOf(t *testing.T, name string, only ...string) Profile {
	t.Helper()
	reg := all.Registry()
	a, err := reg.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cases{reg: reg}.profile(a, only)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfileHasOnlyFaultsTheApproachCanTake(t *testing.T) {
	for _, tc := range []struct {
		approach   string
		want, not  []string
		wantShapes []chaos.Selector
	}{
		{approach: "redis-setnx-px-lua",
			want: []string{"client-pause", "client-crash", "client-clock", "server-pause", "server-kill", "server-restart", "server-clock", "drop-replies", "slow-replies", "partition"},
			// server-isolate needs containers; failover the Sentinels.
			not:        []string{"server-isolate", "failover"},
			wantShapes: []chaos.Selector{{Node: chaos.NodeFirst}, {Client: chaos.ClientHolder, Key: "0"}, {Client: chaos.ClientHolder, Key: "0", Node: chaos.NodeAll}}},
		// etcd is a Go program libfaketime cannot reach.
		{approach: "etcd-lease", want: []string{"client-pause", "server-kill", "partition"}, not: []string{"server-clock", "failover"},
			wantShapes: []chaos.Selector{{Node: chaos.NodeLeader}, {Node: chaos.NodeMinority}}},
		{approach: "redis-sentinel-lua", want: []string{"failover", "client-pause"}, not: []string{"server-isolate"}},
	} {
		p := profileOf(t, tc.approach)
		kinds := p.Kinds()
		for _, k := range tc.want {
			if !slices.Contains(kinds, k) {
				t.Errorf("%s: %s missing from %v", tc.approach, k, kinds)
			}
		}
		for _, k := range tc.not {
			if slices.Contains(kinds, k) {
				t.Errorf("%s: %s offered, but it cannot act here", tc.approach, k)
			}
		}
		for _, sel := range tc.wantShapes {
			if !slices.ContainsFunc(p.Options, func(o Option) bool { return reflect.DeepEqual(o.Target, sel) }) {
				t.Errorf("%s: no option on %s", tc.approach, sel)
			}
		}
		for _, o := range p.Options {
			// A client fault on a client, a server fault on a node.
			switch o.Kind {
			case "client-pause", "client-crash", "client-clock":
				if o.Target.Kind() != chaos.TargetClient {
					t.Errorf("%s: %v", tc.approach, o)
				}
			case "server-pause", "server-kill", "server-restart", "server-clock", "failover":
				if o.Target.Kind() != chaos.TargetNode {
					t.Errorf("%s: %v", tc.approach, o)
				}
			}
		}
	}
}

func TestProfileRefusesFaultsThatCannotAct(t *testing.T) {
	reg := all.Registry()
	a, _ := reg.Get("etcd-lease")
	if _, err := (cases{reg: reg}).profile(a, []string{"server-clock"}); err == nil {
		t.Error("server-clock on etcd-lease accepted")
	}
	if _, err := (cases{reg: reg}).profile(a, []string{"no-such-fault"}); err == nil {
		t.Error("an unknown fault accepted")
	}
	p, err := (cases{reg: reg}).profile(a, []string{"client-pause", "partition"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Kinds(); !reflect.DeepEqual(got, []string{"client-pause", "partition"}) {
		t.Errorf("--faults client-pause,partition: kinds %v", got)
	}
}

func TestGenerateIsSeeded(t *testing.T) {
	p := profileOf(t, "redis-setnx-px-lua")
	for i := range 20 {
		a, b := Generate(p, 7, i), Generate(p, 7, i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("schedule %d of seed 7 differs between calls:\n%s\n%s", i, a.Summary(), b.Summary())
		}
	}
	same := 0
	for i := range 20 {
		if reflect.DeepEqual(Generate(p, 7, i), Generate(p, 8, i)) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d of 20 schedules are the same under seeds 7 and 8", same)
	}
	for j := range 20 {
		parent := Generate(p, 7, j)
		if a, b := Mutate(p, parent, 7, j), Mutate(p, parent, 7, j); !reflect.DeepEqual(a, b) {
			t.Fatalf("mutation %d differs between calls", j)
		}
	}
}

// Every schedule, fresh or mutated, keeps the generator's bounds: one to
// four faults, each among the profile's options, inside the run; lengths
// scaled to the lease; holds that stay within a fifth of the lease unless
// the holder is careful or renews; and it reads back as a scenario file.
func TestGeneratedSchedulesStayInBounds(t *testing.T) {
	reg := all.Registry()
	// Faults on links in fresh schedules (a mutation may move one off its
	// placement), a waiter's and a node's: how many, and how many placed
	// at a release.
	links := map[string]*[2]int{"waiter": {}, "node": {}}
	for _, name := range []string{"redis-setnx-px-lua", "zk-sequential", "etcd-lease", "redis-redlock", "mysql-for-update", "redis-reentrant"} {
		p := profileOf(t, name)
		seen := map[string]bool{}
		counts := map[int]bool{}
		thinking, reentering := 0, 0
		placed := map[string]int{}
		for i := range 300 {
			s := Generate(p, 42, i)
			if i%2 == 1 {
				s = Mutate(p, Generate(p, 42, i-1), 42, i)
			}
			checkBounds(t, p, s)
			counts[len(s.Faults)] = true
			if thinks(s.Workload) {
				thinking++
			}
			if s.Workload.Reentry > 0 {
				reentering++
			}
			for _, f := range s.Faults {
				seen[f.Kind] = true
				placed[f.On]++
				if f.On == scenario.OnReleasing && f.Target.Client == chaos.ClientWaiter {
					placed["waiter at a release"]++
				}
				if on := map[string]string{chaos.ClientWaiter: "waiter", "": "node"}[f.Target.Client]; on != "" && onLinks(f.Kind) && i%2 == 0 {
					links[on][0]++
					if f.On == scenario.OnReleasing {
						links[on][1]++
					}
				}
			}
			sc, err := scenario.Parse(s.Scenario("t"), reg)
			if err != nil {
				t.Fatalf("%s: schedule %d does not read back: %v\n%s", name, i, err, s.Scenario("t"))
			}
			if len(sc.Faults) != len(s.Faults) || sc.Duration != s.Duration || sc.Seed != s.Seed || sc.Workload.Hold != s.Workload.Hold ||
				thinks(sc.Workload) != thinks(s.Workload) || sc.Workload.Think.A != s.Workload.Think.A || sc.Workload.Think.B != s.Workload.Think.B ||
				sc.Workload.Reentry != s.Workload.Reentry {
				t.Fatalf("%s: schedule %d read back differently", name, i)
			}
			if i < 30 { // the runner's own check, a few times per approach
				if _, err := (cases{reg: reg}).caseOf(s, "t"); err != nil {
					t.Fatalf("%s: schedule %d refused by the runner: %v\n%s", name, i, err, s.Summary())
				}
			}
		}
		if thinking < 60 || thinking > 240 {
			t.Errorf("%s: %d of 300 schedules with a think time", name, thinking)
		}
		if placed[scenario.OnReleasing] == 0 || (p.Renewal && p.TTL || p.Watchdog) != (placed[scenario.OnRenewed] > 0) {
			t.Errorf("%s (renews: %v): faults placed at a release %d times, after a renewal %d times in 300 schedules",
				name, p.Renewal && p.TTL || p.Watchdog, placed[scenario.OnReleasing], placed[scenario.OnRenewed])
		}
		waiters := slices.ContainsFunc(p.Options, func(o Option) bool { return o.Target.Client == chaos.ClientWaiter })
		if waiters != (placed["waiter at a release"] > 0) {
			t.Errorf("%s (waiter faults: %v): a waiter faulted as a release is asked %d times in 300 schedules", name, waiters, placed["waiter at a release"])
		}
		if p.Reentrant != (reentering >= 60) || reentering > 240 {
			t.Errorf("%s (reentrant: %v): %d of 300 schedules re-enter", name, p.Reentrant, reentering)
		}
		for n := minFaults; n <= maxFaults; n++ {
			if !counts[n] {
				t.Errorf("%s: no schedule with %d faults in 300", name, n)
			}
		}
		for _, k := range p.Kinds() {
			if !seen[k] {
				t.Errorf("%s: %s never drawn in 300 schedules", name, k)
			}
		}
	}
	// Seven in ten and five in ten, drawn; a server fault two in ten.
	for _, tc := range []struct {
		on       string
		min, max int // percent
	}{{"waiter", 55, 85}, {"node", 35, 65}} {
		n, at := links[tc.on][0], links[tc.on][1]
		if n < 20 || at*100 < n*tc.min || at*100 > n*tc.max {
			t.Errorf("%d of %d faults on a %s's links placed at a release, want %d-%d%%", at, n, tc.on, tc.min, tc.max)
		}
	}
}

func checkBounds(t *testing.T, p Profile, s Schedule) {
	t.Helper()
	w := s.Workload
	T := p.Scale(w)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s: "+format, append([]any{p.Approach, s.Summary()}, args...)...)
	}
	if n := len(s.Faults); n < minFaults || n > maxFaults {
		fail("%d faults", n)
	}
	if w.Clients < minClients || w.Clients > maxClients || w.Keys < 1 || w.Keys > 2 {
		fail("clients %d, keys %d", w.Clients, w.Keys)
	}
	var end time.Duration
	for _, f := range s.Faults {
		end = max(end, f.End())
	}
	freed := p.Session
	if p.TTL && w.TTL > 0 {
		freed = w.TTL
	}
	recovered := end + freed + p.Scale(w)*3/2
	if s.Duration < minDuration || s.Duration > max(maxDuration, round(recovered)) {
		fail("duration %v", s.Duration)
	}
	if end > 0 && s.Duration < round(recovered) {
		fail("duration %v leaves no recovery after the last fault's end %v (freed after %v)", s.Duration, end, freed)
	}
	switch {
	case w.HonourLease && w.Renew:
		fail("careful and renewing at once")
	case w.HonourLease && !p.TTL, w.Renew && !p.Renewal, w.Fenced && (!p.Fencing || w.Kind != workload.Counter), w.Reentry > 0 && !p.Reentrant:
		fail("a workload setting the approach cannot take")
	case !w.HonourLease && !w.Renew && w.Hold.B > T/5:
		fail("hold up to %v with a lease of %v and neither care nor renewal", w.Hold.B, T)
	case thinks(w) && (w.Think.A < 5*time.Millisecond || w.Think.B < w.Think.A || w.Think.B > max(w.TTL/10, 20*time.Millisecond)):
		fail("think time %v with a lease of %v", w.Think, w.TTL)
	}
	for _, f := range s.Faults {
		if !slices.ContainsFunc(p.Options, func(o Option) bool { return o.Kind == f.Kind && reflect.DeepEqual(o.Target, f.Target) }) {
			fail("%s on %s is not among the profile's options", f.Kind, f.Target)
		}
		if f.At < edge || f.End() > s.Duration-edge {
			fail("%s from %v to %v in a run of %v", f.Kind, f.At, f.End(), s.Duration)
		}
		if f.For > maxFor*T || (f.For == 0) != (f.Kind == "client-crash" || f.Kind == "server-restart") {
			fail("%s lasts %v (scale %v)", f.Kind, f.For, T)
		}
		switch {
		case f.On == scenario.OnReleasing && !atRelease(f.Target):
			fail("%s waits for a release but targets neither the servers nor a waiter: %s", f.Kind, f.Target)
		case f.On == scenario.OnReleasing && f.Target.Client == chaos.ClientWaiter && f.When != f.Target.Key:
			fail("%s on a waiter of %s waits for the release of %s", f.Kind, f.Target.Key, f.When)
		case f.On == scenario.OnRenewed && !renews(p, w):
			fail("%s waits for a renewal, and nobody renews", f.Kind)
		case f.When != "" && f.On != scenario.OnReleasing && f.Target.Client != chaos.ClientHolder:
			fail("%s waits for a holder but targets %s", f.Kind, f.Target)
		}
		if l := f.Param("latency"); l != "" {
			d, _ := time.ParseDuration(l)
			if d < 20*time.Millisecond || d > T/2 {
				fail("latency %v with a lease of %v", d, T)
			}
		}
	}
}

// A schedule of an approach from nowhere (the in-memory lock: no server,
// goroutine clients) can still take a client clock fault.
func TestProfileOfAnApproachWithoutServers(t *testing.T) {
	reg := impls.NewRegistry()
	reg.Register(impls.Approach{Name: "mem", Caps: impls.Capabilities{TTL: true}, Safe: true})
	a, _ := reg.Get("mem")
	p, err := (cases{reg: reg}).profile(a, []string{"client-clock"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Kinds(); !reflect.DeepEqual(got, []string{"client-clock"}) {
		t.Fatalf("kinds %v", got)
	}
	if _, err := (cases{reg: reg}).profile(a, []string{"server-pause"}); err == nil {
		t.Error("server-pause accepted for an approach without servers")
	}
}

// Every kind of fault comes up within as many fresh schedules as there
// are kinds, whatever the seed.
func TestEveryKindComesUpInTurn(t *testing.T) {
	p := profileOf(t, "redis-setnx-px-lua")
	kinds := p.Kinds()
	for _, seed := range []uint64{1, 2, 3, 99} {
		seen := map[string]bool{}
		for i := range len(kinds) {
			for _, f := range Generate(p, seed, i).Faults {
				seen[f.Kind] = true
			}
		}
		for _, k := range kinds {
			if !seen[k] {
				t.Errorf("seed %d: %s not among the first %d schedules", seed, k, len(kinds))
			}
		}
	}
}

// Exploring runs that ask for servers run otherwise than those running
// (a server clock jump runs them under libfaketime) wait for a batch of
// their own, so the servers restart once per batch, not per case; no
// drawn run is lost, and each batch asks for one set of servers.
func TestBatchesKeepToOneSetOfServers(t *testing.T) {
	reg := all.Registry()
	p := profileOf(t, "redis-setnx-px-lua", "server-clock", "client-pause")
	e := &explorer{cfg: Config{Parallel: 4, Budget: time.Hour}, cs: cases{reg: reg}, deadline: time.Now().Add(time.Hour)}
	e.res = &Result{Approaches: []*Search{{Approach: p.Approach, Profile: p, searcher: NewSearcher(p, 3, false, NewCoverage())}}}
	var cur runner.ServerOptions
	started := false
	e.running = func() (runner.ServerOptions, bool) { return cur, started }
	next, drawn, ran, restarts := 0, 0, 0, 0
	for range 12 {
		batch, err := e.nextBatch(&next)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			t.Fatal("an empty batch with the budget far from spent")
		}
		var opts []runner.ServerOptions
		for _, x := range batch {
			c, err := e.cs.caseOf(x.s, "t")
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, c.ServerOptions())
		}
		for _, o := range opts[1:] {
			if o != opts[0] {
				t.Fatalf("one batch asks for servers %+v and %+v", opts[0], o)
			}
		}
		if started && opts[0] != cur {
			restarts++
		}
		cur, started = opts[0], true // the batch ran on its servers
		ran += len(batch)
	}
	drawn = e.res.Approaches[0].searcher.fresh
	if ran+len(e.deferred) != drawn {
		t.Errorf("%d runs drawn, %d ran and %d wait: some were lost", drawn, ran, len(e.deferred))
	}
	t.Logf("%d batches, %d runs, %d restarts of the servers", 12, ran, restarts)
	if restarts == 0 || restarts > 6 {
		t.Errorf("%d restarts in 12 batches of two kinds of schedule", restarts)
	}
}

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// memoryPlan is a bench plan over an in-memory lock: no server, so the
// whole numbered flow runs in milliseconds.
func memoryPlan(t *testing.T, svc *memlock.Service, clients int, d time.Duration) Plan {
	t.Helper()
	reg := impls.NewRegistry()
	reg.Register(svc.Approach("memory"))
	p, err := BenchPlan(reg, BenchConfig{Approaches: []string{"memory"}, Clients: []int{clients}, ResultsDir: t.TempDir(),
		Workload: workload.Spec{Duration: d, Keys: 1, Hold: workload.Dist{Kind: "fixed", A: 100 * time.Microsecond}, TTL: time.Second, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readResults(t *testing.T, dir string) report.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunSafeLockAgreesWithItsExpectation(t *testing.T) {
	p := memoryPlan(t, memlock.NewService(1), 4, 300*time.Millisecond)
	out, err := (&Runner{}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Verdicts) != 1 || out.Verdicts[0].Status != verdict.Agrees {
		t.Fatalf("verdicts = %+v, want one %q", out.Verdicts, verdict.Agrees)
	}
	res := readResults(t, out.Dir)
	if !res.Complete || len(res.Runs) != 1 {
		t.Fatalf("results: complete=%v runs=%d", res.Complete, len(res.Runs))
	}
	r := res.Runs[0]
	if r.Acquired == 0 || r.DoubleGrants != 0 || r.Linearizable != "yes" || r.Status != verdict.Agrees || r.Model != checker.ModelLease {
		t.Fatalf("run = %+v", r)
	}
	for _, f := range []string{history.FileName, "summary.md", "timeline-memory-c4.png"} {
		if _, err := os.Stat(filepath.Join(out.Dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// The run's own history is judged as the leases it records, and says so.
	if b, err := os.ReadFile(filepath.Join(out.Dir, "summary.md")); err != nil || !strings.Contains(string(b), "Histories judged under the model lease (") {
		t.Errorf("summary.md does not name the model (%v):\n%s", err, b)
	}
}

// TestRunWithoutHistory: a bench that records nothing (--no-history)
// counts its grants and writes no history, and is judged on what it
// counted.
func TestRunWithoutHistory(t *testing.T) {
	// A bench plan without a history expects nothing of a safe approach:
	// with nothing to check, its exit says nothing of the lock.
	reg := impls.NewRegistry()
	reg.Register(memlock.NewService(1).Approach("memory"))
	for _, noHistory := range []bool{false, true} {
		bp, err := BenchPlan(reg, BenchConfig{Approaches: []string{"memory"}, Clients: []int{1}, NoHistory: noHistory,
			Workload: workload.Spec{Duration: time.Second, Keys: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(bp.Cases[0].Expect.Outcomes) > 0; got == noHistory || bp.Cases[0].Record == noHistory {
			t.Errorf("--no-history %v: expects %v, records %v", noHistory, bp.Cases[0].Expect, bp.Cases[0].Record)
		}
	}
	p := memoryPlan(t, memlock.NewService(1), 4, 300*time.Millisecond)
	for i := range p.Cases {
		p.Cases[i].Record = false
	}
	out, err := (&Runner{}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Verdicts) != 1 || out.Verdicts[0].Status == verdict.Contradicts {
		t.Fatalf("verdicts = %+v", out.Verdicts)
	}
	if r := readResults(t, out.Dir).Runs; len(r) != 1 || r[0].Acquired == 0 {
		t.Fatalf("runs = %+v, want one with its grants counted", r)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, history.FileName)); err == nil {
		t.Errorf("%s written though nothing was to be recorded", history.FileName)
	}
}

func TestRunRacyLockContradictsSafe(t *testing.T) {
	svc := memlock.NewService(1)
	svc.Racy = true
	p := memoryPlan(t, svc, 8, 300*time.Millisecond)
	// The plan expects nothing of an approach declared unsafe; a gate
	// that declares it safe must fail.
	p.Cases[0].Expect = verdict.Expect("test", verdict.Safe)
	out, err := (&Runner{}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	v := out.Verdicts[0]
	if v.Status != verdict.Contradicts {
		t.Fatalf("status = %q (%s), want %q", v.Status, v.Text, verdict.Contradicts)
	}
	r := out.Results.Runs[0]
	if r.DoubleGrants == 0 {
		t.Fatal("a racy lock under 8-way contention showed no double grant")
	}
	// Its holders lost the lock to the second grant, and the in-memory
	// lock told none of them.
	if r.LockLoss == nil || r.LockLoss.NotTold == 0 || r.LockLoss.Told != 0 {
		t.Fatalf("lock loss %+v, want holders that lost the lock untold", r.LockLoss)
	}
	// summary.md says what results.json says (it once read "0 double
	// grants" after a non-linearizable run).
	b, err := os.ReadFile(filepath.Join(out.Dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("0 case(s) as expected, 1 contradicting their expectation, 0 undecided; %d violation(s) in all (%d double grants), 1 case(s) not linearizable.",
		out.Results.Verdict.Violations, r.DoubleGrants)
	if out.Results.Verdict.Violations < int(r.DoubleGrants) {
		t.Fatalf("verdict counts %d violations in all, fewer than the run's %d double grants", out.Results.Verdict.Violations, r.DoubleGrants)
	}
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), "- lock loss: ") {
		t.Fatalf("summary.md does not say %q, nor the lock loss:\n%s", want, b)
	}
}

func TestRunReplacesClientsRetiredByIndeterminateOutcomes(t *testing.T) {
	svc := memlock.NewService(1)
	svc.LoseReplies = 0.05
	p := memoryPlan(t, svc, 4, 500*time.Millisecond)
	p.Cases[0].Workload.TTL = 5 * time.Millisecond // an orphaned grant frees quickly
	out, err := (&Runner{}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results.Runs[0]
	if r.Replaced == 0 || r.Indeterminate == 0 {
		t.Fatalf("replaced=%d indeterminate=%d: lost replies must retire and replace clients", r.Replaced, r.Indeterminate)
	}
	if r.Acquired < 50 {
		t.Fatalf("acquired = %d: the population drained", r.Acquired)
	}
	// results.json counts every indeterminate acquire and release the
	// history holds, no more, no fewer.
	evs, err := history.ReadFile(filepath.Join(out.Dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	info := 0
	for _, e := range evs {
		if e.Type == history.Info && (e.F == history.Acquire || e.F == history.Release) {
			info++
		}
	}
	if int64(info) != r.Indeterminate {
		t.Fatalf("results.json says %d indeterminate, the history holds %d info acquires and releases", r.Indeterminate, info)
	}
}

func TestRunCancelledKeepsWhatRanMarkedIncomplete(t *testing.T) {
	p := memoryPlan(t, memlock.NewService(1), 2, 10*time.Second)
	// Cancelled once the case has granted something, not after a fixed
	// 200 ms: beside two busy loops nothing had been granted by then.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := (&Runner{Progress: func(st Status) {
		if st.Acquired > 0 {
			cancel()
		}
	}}).Run(ctx, p)
	if err == nil {
		t.Fatal("a cancelled run must return the context's error")
	}
	res := readResults(t, out.Dir)
	if res.Complete || res.Note == "" || res.FinishedAt.IsZero() {
		t.Fatalf("complete=%v note=%q finished=%v", res.Complete, res.Note, res.FinishedAt)
	}
	if len(res.Runs) != 1 || res.Runs[0].Acquired == 0 {
		t.Fatalf("what ran must be kept: %+v", res.Runs)
	}
}

func TestBenchPlanRefusesBadInputBeforeAnythingStarts(t *testing.T) {
	reg := impls.NewRegistry()
	reg.Register(memlock.NewService(1).Approach("memory"))
	ok := BenchConfig{Approaches: []string{"memory"}, Clients: []int{1}, Workload: workload.Spec{Duration: time.Second, Keys: 1}}
	tests := []struct {
		name string
		mod  func(*BenchConfig)
	}{
		{"unknown approach", func(c *BenchConfig) { c.Approaches = []string{"nope"} }},
		{"no approaches", func(c *BenchConfig) { c.Approaches = nil }},
		{"no clients", func(c *BenchConfig) { c.Clients = nil }},
		{"too many clients", func(c *BenchConfig) { c.Clients = []int{5000} }},
		{"zero duration", func(c *BenchConfig) { c.Workload.Duration = 0 }},
		{"no keys", func(c *BenchConfig) { c.Workload.Keys = 0 }},
		{"negative ttl", func(c *BenchConfig) { c.Workload.TTL = -time.Second }},
		{"negative acquire timeout", func(c *BenchConfig) { c.Workload.AcquireTimeout = -time.Second }},
		{"unknown workload", func(c *BenchConfig) { c.Workload.Kind = "nope" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.mod(&cfg)
			if _, err := BenchPlan(reg, cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := BenchPlan(reg, ok); err != nil {
		t.Fatalf("a good config was refused: %v", err)
	}
}

func TestOnlyLinkFaultsNeedTheProxies(t *testing.T) {
	mk := func(kind string, sel chaos.Selector) chaos.Step {
		f, err := chaos.New(kind)
		if err != nil {
			t.Fatal(err)
		}
		return chaos.Step{Fault: f, Target: sel}
	}
	node := chaos.Selector{Node: chaos.NodeOne}
	client := chaos.Selector{Client: "0"}
	tests := []struct {
		step chaos.Step
		want bool
	}{
		{mk("drop-replies", node), true},
		{mk("slow-replies", node), true},
		{mk("partition", node), true},
		{mk("partition", chaos.Selector{Client: "0", Nodes: []string{"redis-3"}}), true},
		{mk("server-pause", node), false},
		{mk("server-kill", node), false},
		{mk("client-pause", client), false},
		{mk("client-crash", client), false},
		{mk("client-clock", client), false},
	}
	for _, tt := range tests {
		if got := needsProxies([]chaos.Step{tt.step}); got != tt.want {
			t.Errorf("%s on %s: needs proxies = %v, want %v", tt.step.Fault.Kind(), tt.step.Target, got, tt.want)
		}
	}
}

// run --runs N: each approach's case N times, run i with seed+i, named
// apart so their artifacts do not overwrite each other.
func TestScenarioPlanRepeatsRunsWithSuccessiveSeeds(t *testing.T) {
	reg := impls.NewRegistry()
	reg.Register(memlock.NewService(1).Approach("memory"))
	s, err := scenario.Parse([]byte("name: repeat\napproaches: [memory]\nworkload: {kind: mutex, clients: 2, keys: 1, hold: 1ms, ttl: 1s}\nduration: 1s\nseed: 7\n"), reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		runs  int
		names []string
		seeds []uint64
	}{
		{0, []string{"memory"}, []uint64{7}},
		{1, []string{"memory"}, []uint64{7}},
		{3, []string{"memory-r1", "memory-r2", "memory-r3"}, []uint64{7, 8, 9}},
	} {
		p, err := ScenarioPlan(reg, s, ScenarioOptions{Runs: tt.runs})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Cases) != len(tt.names) || p.Repeats != max(tt.runs, 1) {
			t.Fatalf("runs %d: %d cases, repeats %d", tt.runs, len(p.Cases), p.Repeats)
		}
		for i, c := range p.Cases {
			if c.Name != tt.names[i] || c.Workload.Seed != tt.seeds[i] {
				t.Errorf("runs %d: case %d is %s seed %d, want %s seed %d", tt.runs, i, c.Name, c.Workload.Seed, tt.names[i], tt.seeds[i])
			}
		}
	}
	if _, err := ScenarioPlan(reg, s, ScenarioOptions{Runs: 1001}); err == nil {
		t.Fatal("--runs 1001 accepted")
	}
}

// Every file a run writes is described in results/README.md: each row's
// names, <placeholders> standing for any part of a name.
func TestResultsREADMENamesEveryFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "results", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []*regexp.Regexp
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, name := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
			quoted := regexp.QuoteMeta(name[1])
			quoted = regexp.MustCompile(`<[^>]+>|\\\*`).ReplaceAllString(quoted, ".+")
			patterns = append(patterns, regexp.MustCompile("^"+quoted+"$"))
		}
	}
	// A bench case, and one under a fault (its latency over time drawn).
	svc := memlock.NewService(1)
	bench := memoryPlan(t, svc, 2, 200*time.Millisecond)
	faulted := memoryPlan(t, svc, 2, 600*time.Millisecond)
	c := faulted.Cases[0]
	c.Name = "memory-jump"
	c.Faults = []chaos.Step{step(t, "client-clock", chaos.Selector{Client: "0"}, 100*time.Millisecond, 200*time.Millisecond, map[string]any{"offset": "-1s"})}
	bench.Cases = append(bench.Cases, c)
	out, err := (&Runner{}).Run(context.Background(), bench)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(out.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out.Dir, path)
		seen++
		if !slices.ContainsFunc(patterns, func(p *regexp.Regexp) bool { return p.MatchString(rel) }) {
			t.Errorf("%s is not described in results/README.md", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out.Results.Runs[1].Artifacts, func(a string) bool { return strings.HasPrefix(a, "latency-over-time-") }) {
		t.Errorf("the faulted case drew no latency over time: %v", out.Results.Runs[1].Artifacts)
	}
	if seen < 5 || len(patterns) < 10 {
		t.Fatalf("%d files against %d patterns: the README's table no longer reads", seen, len(patterns))
	}
}

// A scenario's cases know what the matrix predicts of their approach under
// their faults: a violation neither the case's expectation nor a rule
// predicts is Unpredicted (it will contradict), one a rule predicts is not.
func TestScenarioPlanKnowsWhatTheMatrixPredicts(t *testing.T) {
	reg := all.Registry()
	mine := impls.Approach{Name: "my-redis-lock", Server: impls.Redis, Nodes: 1, Safe: true, Caps: impls.Capabilities{TTL: true}}
	reg.Register(mine)
	s, err := scenario.Load("../scenarios/gc-pause-past-ttl.yaml", reg)
	if err != nil {
		t.Fatal(err)
	}
	s.Approaches = append(s.Approaches, mine.Name)
	p, err := ScenarioPlan(reg, s, ScenarioOptions{ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		approach    string
		unpredicted []verdict.Outcome
		predicted   []verdict.Outcome
	}{
		// A TTL lock without fencing under a client pause: outlived and
		// its lost update (and a revocation that follows) are predicted;
		// both leases valid, or a phantom release, are not.
		{"my-redis-lock", []verdict.Outcome{verdict.DoubleGrantBothValid, verdict.PhantomRelease}, []verdict.Outcome{verdict.DoubleGrantOutlived, verdict.LostUpdate, verdict.Revoked}},
		{"redis-setnx-px-lua", []verdict.Outcome{verdict.DoubleGrantBothValid}, []verdict.Outcome{verdict.DoubleGrantOutlived}},
		// The plain DEL's both-valid is the matrix's rule for it.
		{"redis-setnx-px-del", []verdict.Outcome{verdict.PhantomRelease}, []verdict.Outcome{verdict.DoubleGrantBothValid, verdict.DoubleGrantOutlived}},
	} {
		i := slices.IndexFunc(p.Cases, func(c Case) bool { return c.Name == tc.approach })
		if i < 0 {
			t.Fatalf("no case of %s", tc.approach)
		}
		e := p.Cases[i].Expect
		for _, o := range tc.unpredicted {
			if e.Unpredicted[o] == "" {
				t.Errorf("%s: %s is not unpredicted", tc.approach, o)
			}
		}
		for _, o := range tc.predicted {
			if why, ok := e.Unpredicted[o]; ok {
				t.Errorf("%s: %s unpredicted: %s", tc.approach, o, why)
			}
		}
	}
}

// A case whose fault never took effect (the holder of a key nobody uses
// is to be hung) never asked its question: its missed violation is
// undecided, not the lock's contradiction.
func TestFaultNeverInjectedIsUndecided(t *testing.T) {
	p := memoryPlan(t, memlock.NewService(1), 1, 3500*time.Millisecond)
	p.Cases[0].Faults = []chaos.Step{step(t, "client-hang", chaos.Selector{Client: chaos.ClientHolder, Key: "5"}, 200*time.Millisecond, 500*time.Millisecond, nil)}
	p.Cases[0].Expect = verdict.Expect("test", verdict.DoubleGrantOutlived)
	out, err := (&Runner{}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results.Runs[0]
	if r.Status != verdict.Undecided || !strings.Contains(r.Explanation, "never took effect") || !strings.Contains(r.Explanation, "nobody held") {
		t.Fatalf("status %q (%s), want undecided: the fault never took effect", r.Status, r.Explanation)
	}
}

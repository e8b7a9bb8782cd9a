package explore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// The shrinker on real runs of the in-memory lock with a planted timing
// bug (a lock's expiry judged by the asking client's clock): a client
// whose clock jumps ahead takes a held lock. From two clock faults (one
// that matters, one that does not), four clients, two keys and a counter
// workload, it comes down to the one fault that matters on a plainer
// workload, and every schedule it kept showed the violation in most of
// its runs, as the final one still does.
func TestShrinkOnTheInMemoryLock(t *testing.T) {
	svc := memlock.NewService(1)
	svc.ClientClockExpiry = true
	reg := impls.NewRegistry()
	reg.Register(svc.Approach("mem-clock-bug"))
	cs := cases{reg: reg}
	a, _ := reg.Get("mem-clock-bug")
	p, err := cs.profile(a, []string{"client-clock"})
	if err != nil {
		t.Fatal(err)
	}
	ttl := 100 * time.Millisecond
	start := Schedule{Approach: a.Name, Duration: 800 * time.Millisecond, Seed: 5,
		Workload: workload.Spec{Kind: workload.Counter, Clients: 4, Keys: 2, TTL: ttl, AcquireTimeout: 200 * time.Millisecond,
			Hold: workload.Dist{Kind: "uniform", A: 5 * time.Millisecond, B: 15 * time.Millisecond}},
		Faults: []Fault{
			// Behind: the client sees locks live longer; harmless.
			{Kind: "client-clock", Target: chaos.Selector{Client: "1"}, Params: []Param{{Name: "offset", Value: "-400ms"}}, At: 200 * time.Millisecond, For: 300 * time.Millisecond},
			// Ahead by more than a lease, for most of the run.
			{Kind: "client-clock", Target: chaos.Selector{Client: "0"}, Params: []Param{{Name: "offset", Value: "800ms"}}, At: 300 * time.Millisecond, For: 300 * time.Millisecond},
		}}
	first, err := cs.caseOf(start, "template")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := (&runner.Runner{}).Open(context.Background(), runner.Plan{Kind: "test", Cases: []runner.Case{first}, ResultsDir: t.TempDir(), Lean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background(), nil)
	class := verdict.DoubleGrantBothValid
	// Every run the shrinker asked for, and what it showed.
	type run struct {
		s     string
		shown bool
	}
	var runs []run
	oracle := func(ctx context.Context, s Schedule) (Trial, error) {
		c, err := cs.caseOf(s, fmt.Sprintf("s%03d", len(runs)))
		if err != nil {
			return Trial{}, err
		}
		res, err := sess.RunCase(ctx, c)
		if err != nil {
			return Trial{}, err
		}
		tr := trial(res, c.Name, class, "", false, verdict.Freeing{Scale: time.Second})
		runs = append(runs, run{unseeded(s), tr.Shown})
		return tr, nil
	}
	// The schedule must show it to start with.
	tr, err := oracle(context.Background(), start)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Shown {
		t.Fatal("the planted bug did not show under a client clock 800ms ahead")
	}
	// About 30 runs on an idle machine; the rest is room for a second
	// pass when a starved run refused a cut that shows (CI: "one key"
	// refused once, and 40 runs ended before the pass that kept it).
	sh := &Shrinker{Oracle: oracle, Scale: p.Scale, MaxRuns: 70}
	out, err := sh.Shrink(context.Background(), start, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := out.Schedule
	t.Logf("%d runs, steps %v; final: %s", out.Runs, out.Steps, s.Summary())
	if !out.Confirmed || len(out.Steps) == 0 {
		t.Fatalf("nothing shrunk: confirmed %v, %d/%d", out.Confirmed, out.Hits, out.Tries)
	}
	if len(s.Faults) != 1 || s.Faults[0].Target.Client != "0" {
		t.Errorf("the fault that matters is not the one left: %s", s.Summary())
	}
	// The clients and the run are always cut; the keys to one on an idle
	// machine, not always beside two busy loops (a starved run refused the
	// cut once and the budget ended before a second pass).
	if s.Workload.Keys > start.Workload.Keys || s.Workload.Clients > 3 || s.Duration >= start.Duration {
		t.Errorf("not smaller: %s", s.Summary())
	}
	if s.Workload.Keys != 1 {
		t.Logf("the keys were not cut to one: %s", s.Summary())
	}
	// Every schedule kept (the final one among them) showed the class in
	// most of the runs it was given: run k of a schedule has its seed plus
	// k, so its runs are told by the schedule without its seed.
	kept := map[string]bool{unseeded(s): true}
	tally := map[string][2]int{}
	for _, r := range runs {
		x := tally[r.s]
		x[1]++
		if r.shown {
			x[0]++
		}
		tally[r.s] = x
	}
	for key := range kept {
		if x := tally[key]; 2*x[0] <= x[1] {
			t.Errorf("kept a schedule shown in %d of its %d runs", x[0], x[1])
		}
	}
	if 2*out.Hits <= out.Tries {
		t.Errorf("final schedule: %d of %d runs", out.Hits, out.Tries)
	}
	// Its scenario file reads back, states the class, and runs as a case.
	d := s.Draft("found")
	d.Expect = []string{string(class)}
	sc, err := scenario.Parse(scenario.Format(d), reg)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := sc.ExpectFor(a); !ok || len(e.Outcomes) != 1 || e.Outcomes[0] != class {
		t.Errorf("expect: %v", e)
	}
}

// A search on an in-memory lock that grants twice under plain contention,
// cut short (a Ctrl-C) as soon as it has a finding: the finding is kept,
// unshrunk, as a scenario file that loads; results.json and index.html say
// what was found and that the search was interrupted.
func TestExploreKeepsFindingsWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := racySearch(t, time.Minute)
	cfg.Progress = func(p Progress) {
		if p.Findings > 0 {
			cancel() // Ctrl-C
		}
	}
	res, err := Run(ctx, cfg)
	reg := cfg.Registry
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the interruption", err)
	}
	if res == nil || !res.Interrupted || len(res.Findings) == 0 {
		t.Fatalf("result %+v", res)
	}
	f := res.Findings[0]
	for _, x := range res.Findings {
		t.Logf("found %s (known %v) in run %d of %d, %v in", x.Class, x.Known, x.Run, res.Runs, x.After.Round(time.Millisecond))
	}
	if f.Known || f.Class != verdict.DoubleGrantBothValid {
		t.Errorf("first finding %s known=%v: %s", f.Class, f.Known, f.Why)
	}
	sc, err := scenario.Load(filepath.Join(res.Dir, f.File), reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Faults) != len(f.Original.Faults) {
		t.Errorf("the file holds %d faults, the schedule that found it %d", len(sc.Faults), len(f.Original.Faults))
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rj struct {
		Complete bool    `json:"complete"`
		Explore  Summary `json:"explore"`
	}
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	if rj.Complete || !rj.Explore.Interrupted || len(rj.Explore.Findings) != len(res.Findings) || rj.Explore.New == 0 {
		t.Errorf("results.json: complete %v, explore %+v", rj.Complete, rj.Explore)
	}
	html, err := os.ReadFile(filepath.Join(res.Dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Interrupted", f.File, string(f.Class)} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("index.html does not say %q", want)
		}
	}
	j, err := res.JUnit()
	if err != nil || !bytes.Contains(j, []byte("<failure")) {
		t.Errorf("JUnit of a new finding has no failure: %v\n%s", err, j)
	}
}

// racySearch is a seed-2 search for budget of an in-memory lock that
// grants twice under plain contention, under client clock jumps, judged by
// the shipped matrix.
func racySearch(t *testing.T, budget time.Duration) Config {
	t.Helper()
	svc := memlock.NewService(1)
	svc.Racy = true
	reg := impls.NewRegistry()
	reg.Register(svc.Approach("mem-racy"))
	m, err := matrix.Load(matrix.Shipped, all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	return Config{Registry: reg, Approaches: []string{"mem-racy"}, Faults: []string{"client-clock"}, Budget: budget,
		Seed: 2, Steer: true, Expect: matrix.NewExpectations(m, all.Registry()), ResultsDir: t.TempDir()}
}

// unseeded is s's scenario without its seed: the same for each of its runs.
func unseeded(s Schedule) string {
	s.Seed = 0
	return string(s.Scenario("x"))
}

// A search asked to stop after one new finding ends once that finding is
// confirmed by its shrink, with no exploring run after it, and says so in
// its results and summary. (Without it the search runs on past its
// findings: TestExploreKeepsFindingsWhenInterrupted's is cut by hand.)
func TestExploreStopsAfterNewFindings(t *testing.T) {
	t.Parallel()
	// A shrink gets 30% of the budget, 27 s: a few of the in-memory lock's cases.
	cfg := racySearch(t, 90*time.Second)
	cfg.StopAfterNew = 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var confirmed []*Finding
	for _, f := range res.Findings {
		if !f.Known && f.Shrunk != nil && f.Shrunk.Confirmed {
			confirmed = append(confirmed, f)
		}
	}
	t.Logf("%d exploring runs, %d shrink runs in %v; %d new confirmed", res.Runs, res.ShrinkRuns, res.Elapsed.Round(time.Millisecond), len(confirmed))
	if !res.StoppedEarly || len(confirmed) != 1 {
		t.Fatalf("stopped early %v with %d new findings confirmed, want it stopped at the first", res.StoppedEarly, len(confirmed))
	}
	// No exploring run began after the shrink: the runs are those of the
	// batch that found it, at most Parallel side by side.
	if f := confirmed[0]; res.Runs >= f.Run+res.Parallel {
		t.Errorf("%d exploring runs, the finding in run %d with %d side by side: the search went on after its shrink", res.Runs, f.Run, res.Parallel)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rj struct {
		Explore Summary `json:"explore"`
	}
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	if !rj.Explore.StoppedEarly {
		t.Errorf("results.json does not say the search stopped early: %+v", rj.Explore)
	}
	if html, err := os.ReadFile(filepath.Join(res.Dir, "index.html")); err != nil || !bytes.Contains(html, []byte("Stopped early")) {
		t.Errorf("index.html does not say the search stopped early (%v)", err)
	}
	var out bytes.Buffer
	if err := res.Print(&out); err != nil || !bytes.Contains(out.Bytes(), []byte("stopped early")) {
		t.Errorf("the summary does not say it stopped early (%v):\n%s", err, out.String())
	}
}

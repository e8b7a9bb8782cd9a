package planted_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/adapter"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/explore/planted"
	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/internal/keptdir"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/verdict"
)

// workerArg makes this test binary a `locklab worker` that knows the
// planted approaches: a client-crash needs its clients in processes.
const workerArg = "locklab-planted-worker"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		if err := fleet.ServeWorker(context.Background(), registry(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// registry is every built-in approach and the planted ones: registered
// here, in a test, and nowhere else.
func registry() *impls.Registry {
	reg := all.Registry()
	planted.Register(reg)
	return reg
}

// searchOf is a search at seed of approaches under faults for budget,
// judged by the shipped matrix, its clients in processes of this test
// binary. It stops at the first new finding its shrink confirms, as
// a gate would: what the tests ask of the rest of the budget is that the
// correct approach beside the bug showed nothing new meanwhile.
func searchOf(t *testing.T, reg *impls.Registry, budget time.Duration, seed uint64, approaches []string, faults ...string) explore.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, err := matrix.Load(matrix.Shipped, all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	return explore.Config{Registry: reg, Approaches: approaches, Faults: faults,
		Budget: budget, Seed: seed, Steer: true, Expect: matrix.NewExpectations(m, all.Registry()),
		ResultsDir: keptdir.New(t, "locklab-explore-"), StopAfterNew: 1, Runner: &runner.Runner{Log: t.Logf, WorkerArgv: []string{exe, workerArg}}}
}

// The planted release bug (a compare-and-delete that times out is retried
// as a plain DEL) is found on real Redis within the budget, told new, and
// shrunk to a scenario file of at most two faults that locklab run
// reproduces; redis-setnx-px-lua, explored beside it under the same faults
// (all of which its expectations call safe), shows nothing new.
func TestExploreFindsAPlantedBugOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	// Beside the other searches: found in 24-30 s of their budgets (90 s
	// to 3 min) with two busy loops beside the suite.
	t.Parallel()
	reg := registry()
	bug, correct := planted.UncheckedRelease.Name, "redis-setnx-px-lua"
	// Three minutes, as docs/explore.md measures: a new finding is shrunk
	// for at most 30% of the budget, and a find 49 s into a 90 s search
	// left its shrink 27 s, 7 runs, stopped at three faults.
	budget := 3 * time.Minute
	// The faults the matrix calls safe for a TTL lock on one node.
	cfg := searchOf(t, reg, budget, 1, []string{bug, correct}, "slow-replies", "drop-replies", "server-pause", "client-crash")
	start := time.Now()
	res, err := explore.Run(context.Background(), cfg)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d exploring runs, %d shrink runs in %v", res.Runs, res.ShrinkRuns, took.Round(time.Second))
	if took > budget+budget/10 {
		t.Errorf("took %v, budget %v: more than 10%% over", took, budget)
	}
	var found *explore.Finding
	for _, f := range res.Findings {
		t.Logf("%s %s known=%v run %d after %v: %s", f.Approach, f.Class, f.Known, f.Run, f.After.Round(time.Second), f.Why)
		switch {
		case f.Approach == correct && !f.Known:
			t.Errorf("a new finding for %s under faults its expectations call safe: %s: %s", correct, f.Class, f.Proof)
		case f.Approach == bug && f.Class == verdict.DoubleGrantBothValid && !f.Known:
			found = f
		}
	}
	if found == nil {
		t.Fatalf("the planted bug was not found in %d runs", res.Runs)
	}
	sh := found.Shrunk
	if sh != nil && sh.Refuted {
		// Found, told new, and then shown in too few of its re-runs to be
		// shrunk (a late release reply is a matter of timing: seen once,
		// with both cores busy, in 1 of 3). The search did its part; what
		// a shrink and its file do is asserted when one is confirmed.
		t.Logf("the finding did not reproduce in most of its re-runs (%d of %d): not shrunk", sh.Hits, sh.Tries)
		return
	}
	if sh == nil || !sh.Confirmed {
		t.Fatalf("the finding was neither confirmed nor refuted: %+v", sh)
	}
	checkShrunkSize(t, sh, found.Schedule())
	// The file is a scenario: it loads, states the class, and runs.
	path := filepath.Join(res.Dir, found.File)
	sc, err := scenario.Load(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get(bug)
	if e, ok := sc.ExpectFor(a); !ok || len(e.Outcomes) != 1 || e.Outcomes[0] != verdict.DoubleGrantBothValid {
		t.Errorf("%s expects %v", found.File, e.Outcomes)
	}
	// locklab run's plan of it shows it again (replays). Alone, the release
	// bug's race (compare-and-delete, another client's SET, the late DEL,
	// in that order) is won less often than beside other cases, where the
	// shrink judged it: files shown 3 of 3 and 2 of 2 in their shrinks
	// showed 0 of 3 and 0 of 5 one at a time; one shown in 3 of its shrink
	// runs showed 0 of 5 side by side within the suite's load, two busy
	// loops beside it.
	replays(t, reg, sc, found.File, sh)
	// results.json carries the exploration.
	b, err := os.ReadFile(filepath.Join(res.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rj struct {
		Explore explore.Summary `json:"explore"`
	}
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	if rj.Explore.New < 1 || rj.Explore.Runs != res.Runs || len(rj.Explore.Approaches) != 2 {
		t.Errorf("results.json explore: %+v", rj.Explore)
	}
}

// The planted liveness bug (SETNX, then PEXPIRE) leaves a key with no TTL
// when the SETNX's reply is lost or the client dies between the two: a
// lock held for ever by nobody. explore tells it (blocked, new) and shrinks
// it to a file that locklab run replays; redis-setnx-px-lua under the same
// faults is never stuck.
func TestExploreFindsAStuckLockOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	// Beside the other searches: found in 24-30 s of their budgets (90 s
	// to 3 min) with two busy loops beside the suite.
	t.Parallel()
	// A confirmed shrink's file is replayed; one found and told new but
	// shown in too few of its re-runs to be shrunk is not: a lost SETNX
	// reply must fall on a free key (under load the schedule found at 21 s
	// showed it in none of 9 replays). The search did its part.
	// Two minutes: with two busy loops beside the suite a 90 s search ran
	// 36 cases and did not find it (found in 11 s and 22 s before); a
	// two-minute one, 36 cases, once in six such runs (findsNew then
	// searches a second seed).
	// Lost replies only: a client killed between its SETNX and its PEXPIRE
	// leaves the key stuck too, but that window is one round trip, wide
	// only while the machine is starved; a search that shrank to a waiter's
	// crash (shown in 4 of 5 while the machine was busiest) replayed it in
	// 0 of 9 once the load had passed.
	findsNew(t, planted.ExpireAfterSet.Name, "redis-setnx-px-lua", verdict.Blocked, 2*time.Minute, "drop-replies")
}

// checkShrunkSize wants a shrink that ran its course down to two faults
// at most. One its budget stopped (a third of the search's, which two busy
// loops beside the suite leave 16 runs: four faults left) says nothing of
// how far it would have gone.
func checkShrunkSize(t *testing.T, sh *explore.Shrunk, s explore.Schedule) {
	t.Helper()
	t.Logf("shrunk in %d runs: %s (shown in %d of %d; with no fault: %d of %d)", sh.Runs, s.Summary(), sh.Hits, sh.Tries, sh.WithoutFaults.Hits, sh.WithoutFaults.Tries)
	n := len(s.Faults)
	switch {
	case n > 2 && sh.Stopped != "":
		t.Logf("shrunk to %d faults when it stopped (%s): its size is not judged", n, sh.Stopped)
	case n > 2:
		t.Errorf("shrunk to %d faults, want at most 2", n)
	}
}

// findsNew explores bug and correct (their expectations call the faults
// safe, or predict only what every lease does) for budget and wants bug's
// finding of class told new, and nothing of that class told new for
// correct. A confirmed shrink is at most two faults and its file expects
// the class and replays (replays). A search that finds nothing on a busy
// machine is followed by one at the next seed.
func findsNew(t *testing.T, bug, correct string, class verdict.Outcome, budget time.Duration, faults ...string) {
	t.Helper()
	reg := registry()
	stalls := stall.NewWatch(t.Context())
	var found *explore.Finding
	var res *explore.Result
	for seed := uint64(1); ; seed++ {
		cfg := searchOf(t, reg, budget, seed, []string{bug, correct}, faults...)
		start := time.Now()
		var err error
		if res, err = explore.Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		still := stalls.Within(start, start.Add(took))
		t.Logf("seed %d: %d exploring runs, %d shrink runs in %v; this process stood still %v of it", seed, res.Runs, res.ShrinkRuns, took.Round(time.Second), still.Round(time.Millisecond))
		for _, f := range res.Findings {
			t.Logf("%s %s known=%v run %d after %v: %s; %s", f.Approach, f.Class, f.Known, f.Run, f.After.Round(time.Second), f.Why, f.Proof)
			switch {
			case f.Approach == correct && f.Class == class && !f.Known:
				t.Errorf("%s told %s new under faults it is safe under: %s", correct, class, f.Proof)
			case f.Approach == bug && f.Class == class && !f.Known:
				found = f
			}
		}
		if found != nil {
			break
		}
		// A busy machine moves the race a search must win (the stuck
		// lock: a lost reply on a free key), so a second seed searches
		// there; a quiet one gets no second chance. Quiet, this process
		// stands still about 0.05% of a search (27 ms in 60 s beside an
		// exploration of four cases side by side); beside two busy loops
		// too, 1.25% (377 ms in 30 s).
		if seed == 2 || still < took/200 {
			t.Fatalf("%s's %s was not found in %d runs at seed %d", bug, class, res.Runs, seed)
		}
	}
	sh := found.Shrunk
	if sh == nil || !sh.Confirmed {
		t.Logf("not confirmed in its re-runs: not shrunk (%+v)", sh)
		return
	}
	checkShrunkSize(t, sh, found.Schedule())
	sc, err := scenario.Load(filepath.Join(res.Dir, found.File), reg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get(bug)
	if e, ok := sc.ExpectFor(a); !ok || len(e.Outcomes) != 1 || e.Outcomes[0] != class {
		t.Errorf("%s expects %v", found.File, e.Outcomes)
	}
	replays(t, reg, sc, found.File, sh)
}

// replays runs a found file as locklab run does, in rounds of five runs side
// by side (as the search ran its cases and as the file advises), while
// none showed it, until fifteen runs were decided (six rounds at most),
// and fails the test when none did. An undecided run is no evidence
// either way: a drop on a holder begun as a 26 ms hold ended never met the
// release it was there to strike (10 of 15 runs of a release bug's file).
// How often a race shows depends on the machine's load: the stuck lock's
// schedule, shown in 5 of 5 of its shrink runs, replayed in 1 of 6 beside
// two busy loops, 4 of 6 on an idle machine, and 0 of 9 twice within the
// whole suite's load (whether the waiter's poll is in flight as the drop
// begins, and whether drops end before the replaced clients ask).
func replays(t *testing.T, reg *impls.Registry, sc *scenario.Scenario, file string, sh *explore.Shrunk) {
	t.Helper()
	// A file its shrink measured at half or less (the search's first
	// showing counted among them) is a rare race, and explore says so
	// ("shown in 2 of 5"); what is promised to replay is a file shown in
	// most of its runs. Twice the release bug's first find at seed 1, one
	// drop on the holder, measured 2 of 5 and replayed 0 of 15.
	if 2*sh.Hits <= sh.Tries {
		t.Logf("%s: shown in %d of %d of its shrink's runs: a rare race, not replayed", file, sh.Hits, sh.Tries)
		return
	}
	// Shown with no fault as well, beside the file's measuring runs: the
	// machine's load won the race (a release answered 152 ms late, past the
	// lock's own 100 ms, beside two busy loops), and the faults the file
	// keeps do not make it once the load eases (0 of 15).
	if c := sh.WithoutFaults; c.Hits > 0 {
		t.Logf("%s: shown with no fault too, in %d of %d runs: the lock's own race under this load, not replayed", file, c.Hits, c.Tries)
		return
	}
	agreed, runs, decided := 0, 0, 0
	for round := 0; round < 6 && agreed == 0 && decided < 15; round++ {
		_, out := runScenario(t, reg, sc, 5)
		for _, v := range out.Verdicts {
			runs++
			if v.Status != verdict.Undecided {
				decided++
			}
			if v.Status == verdict.Agrees {
				agreed++
				continue
			}
			t.Logf("run %d of the file: %s: %s", runs, v.Status, v.Text)
		}
	}
	t.Logf("locklab run of %s: as expected in %d of %d runs (%d decided)", file, agreed, runs, decided)
	if agreed == 0 {
		t.Errorf("the found file did not reproduce in %d runs (%d decided)", runs, decided)
	}
}

// runText runs the scenario text once, its cases in this process.
func runText(t *testing.T, reg *impls.Registry, text string) (runner.Plan, *runner.Outcome) {
	t.Helper()
	sc, err := scenario.Parse([]byte(text), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.ScenarioPlan(reg, sc, runner.ScenarioOptions{ResultsDir: keptdir.New(t, "locklab-scenario-")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := (&runner.Runner{Log: t.Logf}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return p, out
}

// The planted renewal bug (an extend that PEXPIREs whatever lock the key
// holds) shows under a partition as every lease does, a holder outliving
// its lease; what tells it apart is how: the cut-off holder's renewals,
// sent after the other client was granted the key, are answered ok
// (renewed-over-another), which locklab explore tells new though the class
// is known. redis-setnx-px-lua under the same partition outlives its
// leases too, and its renewals are refused: no double grant of it comes
// about so. (Not yet searched by explore: its placement rarely lets a
// holder hold on past a heal that long.)
func TestUncheckedRenewalIsNamedOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	// Beside the searches, whose budgets are fixed: a case of its own
	// servers, not the package's time after them.
	t.Parallel()
	reg := registry()
	const text = `name: renewal
approaches: [planted-extend-unchecked, redis-setnx-px-lua]
workload: {kind: counter, clients: 2, keys: 1, hold: uniform:6s-7s, ttl: 1s, acquire-timeout: 15s, renew: true}
duration: 9s
faults:
  - {fault: partition, target: {client: holder, key: "0", node: all}, at: 500ms, when: {holding: 0}, for: 3s}
expect:
  planted-extend-unchecked: [double-grant]
  redis-setnx-px-lua: [double-grant]
`
	p, out := runText(t, reg, text)
	for i, r := range out.Results.Runs {
		a := p.Cases[i].Approach.Name
		n := r.Mechanisms[checker.RenewedOverAnother]
		t.Logf("%s: %s; %d double grants, %d renewed over another's hold", a, out.Verdicts[i].Text, r.DoubleGrants, n)
		switch {
		case out.Verdicts[i].Status == verdict.Undecided:
			t.Logf("%s undecided: not judged", a)
		case a == planted.UncheckedExtend.Name && n == 0:
			t.Errorf("%s: no double grant named %s", a, checker.RenewedOverAnother)
		case a != planted.UncheckedExtend.Name && n > 0:
			t.Errorf("%s: %d double grants named %s", a, n, checker.RenewedOverAnother)
		}
	}
}

// The planted re-entry bug needs no fault, only a careful holder that
// re-enters: explore draws both for a re-entrant lock, tells the double
// grant new and shrinks it; redis-reentrant beside it shows none.
func TestExploreFindsAReentryBugOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	// Beside the other searches: found in 24-30 s of their budgets (90 s
	// to 3 min) with two busy loops beside the suite.
	t.Parallel()
	findsNew(t, planted.ReentryKeepsTTL.Name, "redis-reentrant", verdict.DoubleGrantBothValid, 90*time.Second, "slow-replies", "client-crash")
}

// The planted re-entry bug (a re-entry that leaves the key's TTL where it
// was while the holder takes it for a fresh lease) shows with no fault at
// all once careful holders re-enter: a waiter is granted the key while the
// holder's lease is valid by its own reckoning. The same workload on
// redis-reentrant (Redisson's RLock, whose re-entry resets the TTL) is
// safe, and without re-entry the planted lock is too: neither shows the
// bug's signature, a double grant with both leases valid. (A holder the
// machine starved past its 1 s lease, honour-lease or not, is the hazard
// of every lease: with two busy loops beside the suite the planted lock
// without re-entry showed one, outlived.)
func TestReentryBugShowsOnlyWithReentry(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	// Beside the searches, whose budgets are fixed: a case of its own
	// servers, not the package's time after them.
	t.Parallel()
	reg := registry()
	const text = `name: reentry
approaches: [planted-reentry-keeps-ttl, redis-reentrant]
workload: {kind: counter, clients: 2, keys: 1, hold: uniform:1200ms-1500ms, ttl: 1s, acquire-timeout: 5s, honour-lease: true, reentry: %v}
duration: 5s
expect:
  planted-reentry-keeps-ttl: [%s]
  redis-reentrant: [not:double-grant:both-valid]
`
	for _, tc := range []struct {
		reentry float64
		planted string
	}{{1, "double-grant:both-valid"}, {0, "not:double-grant:both-valid"}} {
		// A run the lab stalled in is run again, twice at most: a holder
		// starved past its lease re-enters on a fresh hold, whose inner
		// release then frees the key under its outer hold (redis-reentrant
		// showed a both-valid double grant so beside the suite, locklab
		// stalled 0.27 s). A contradiction fails at once.
		for try := 1; ; try++ {
			p, out := runText(t, reg, fmt.Sprintf(text, tc.reentry, tc.planted))
			undecided := false
			for i, v := range out.Verdicts {
				t.Logf("reentry %v, %s: %s: %s", tc.reentry, p.Cases[i].Approach.Name, v.Status, v.Text)
				switch {
				case v.Status == verdict.Undecided && try < 3:
					undecided = true
				case v.Status != verdict.Agrees:
					t.Errorf("reentry %v, %s: %s: %s", tc.reentry, p.Cases[i].Approach.Name, v.Status, v.Text)
				}
			}
			if !undecided {
				break
			}
		}
	}
}

// runRepeated runs the scenario text runs times over (run i at the file's
// seed plus i), its cases side by side, as locklab run --runs does; only
// the approaches named, when any are (--approach). A client a fault must
// stop whole runs as a process of this test binary.
func runRepeated(t *testing.T, reg *impls.Registry, text string, runs int, only ...string) (runner.Plan, *runner.Outcome) {
	t.Helper()
	sc, err := scenario.Parse([]byte(text), reg)
	if err != nil {
		t.Fatal(err)
	}
	return runScenario(t, reg, sc, runs, only...)
}

// runScenario runs sc runs times over, its cases side by side, each
// client a process of this test binary; only the approaches named, when
// any are.
func runScenario(t *testing.T, reg *impls.Registry, sc *scenario.Scenario, runs int, only ...string) (runner.Plan, *runner.Outcome) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.ScenarioPlan(reg, sc, runner.ScenarioOptions{ResultsDir: keptdir.New(t, "locklab-replay-"), Runs: runs, Approaches: only})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner.Runner{Log: t.Logf, WorkerArgv: []string{exe, workerArg}, Parallel: true, MaxCases: explore.DefaultParallel()}
	out, err := r.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return p, out
}

// agreesWhereDecided runs text runs times and wants every decided run as
// its file expects (an expected violation that did not show contradicts),
// and each approach decided in at least one run. A run the lab's stalls
// left undecided says nothing either way: an approach none of whose runs
// was decided is run again, three rounds at most (beside two busy loops
// and the suite's other packages, locklab stood still ten times in 4 s
// and left all three runs of the renewal bug undecided).
func agreesWhereDecided(t *testing.T, reg *impls.Registry, text string, runs int, only ...string) {
	t.Helper()
	for round := 1; ; round++ {
		p, out := runRepeated(t, reg, text, runs, only...)
		none := undecidedApproaches(t, p, out)
		if len(none) == 0 {
			return
		}
		if round == 3 {
			t.Errorf("%v: no run decided in %d rounds of %d", none, round, runs)
			return
		}
		t.Logf("%v: no run decided in round %d: again", none, round)
		only = none
	}
}

// undecidedApproaches fails every decided run that is not as expected and
// returns the approaches with no run decided.
func undecidedApproaches(t *testing.T, p runner.Plan, out *runner.Outcome) []string {
	t.Helper()
	decided := map[string]int{}
	for i, v := range out.Verdicts {
		c := p.Cases[i]
		if v.Status != verdict.Undecided {
			decided[c.Approach.Name]++
		}
		if v.Status == verdict.Agrees || v.Status == verdict.Undecided {
			t.Logf("%s: %s: %s", c.Name, v.Status, v.Text)
			continue
		}
		t.Errorf("%s: %s: %s", c.Name, v.Status, v.Text)
	}
	var none []string
	for _, c := range p.Cases {
		if decided[c.Approach.Name] == 0 && !slices.Contains(none, c.Approach.Name) {
			none = append(none, c.Approach.Name)
		}
	}
	return none
}

// The planted waiter bug (a waiting acquire whose poll outlives a deadline
// of its own takes the key with a plain SET) shows once a waiter's replies
// come late: 300 ms, past its 100 ms, while the holder is 200 ms into a
// hold of 1.5 s or more of its 3 s lease. The waiter overwrites the key
// and is granted while the holder's lease is valid. (With holds of 1 s the
// waiter's poll, its deadline and the SET's late reply had to fit in
// 0.8 s: beside two busy loops and the suite, 1 of 3 runs did.) redis-setnx-px-lua's
// waiter under the same slow replies only waits longer: safe. (That the
// holder's links slowed instead leave the planted lock safe held 9 of 9
// on a quiet machine; it is no test: a busy one starves a waiter's poll
// past 100 ms now and then, which is the bug's path too.)
func TestWaiterOverwritesShowsWithASlowWaiter(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	// Beside the searches, whose budgets are fixed: cases of their own
	// servers, not the package's time after them.
	t.Parallel()
	const text = `name: waiter
approaches: [planted-waiter-overwrites, redis-setnx-px-lua]
workload: {kind: mutex, clients: 2, keys: 1, hold: uniform:1500ms-1700ms, ttl: 3s, acquire-timeout: 5s}
duration: 4s
faults:
  - {fault: slow-replies, latency: 300ms, target: {client: waiter, key: "0", node: all}, when: {holding: "0", after: 200ms}, for: 1300ms}
expect:
  planted-waiter-overwrites: [double-grant:both-valid]
  redis-setnx-px-lua: [safe]
`
	agreesWhereDecided(t, registry(), text, 3)
}

// The planted renewal bug (a renewal within half a TTL of the last round
// trip answered from memory) shows when the holder is paused right after
// its first renewal, the one answered from memory (`when: {renewed}`): it
// believes in a lease a third of a TTL past the key's, the key expires in
// the pause, and the waiter is granted while the holder's lease is valid
// by its reckoning. redis-setnx-px-lua paused at the same place renewed
// for real: its holder only outlives its lease, which the matrix predicts
// of every lease. The planted lock paused at its grant instead (`when:
// {holding}`, before any renewal) does no worse than that either.
func TestRenewalFromMemoryShowsAfterTheFirstRenewal(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	// Beside the searches, whose budgets are fixed: cases of their own
	// servers, not the package's time after them.
	t.Parallel()
	const text = `name: renewal-from-memory
approaches: [planted-renewal-from-memory, redis-setnx-px-lua]
workload: {kind: mutex, clients: 2, keys: 1, hold: uniform:1s-1200ms, ttl: 2s, acquire-timeout: 5s, renew: true}
duration: 4s
faults:
  - {fault: client-pause, target: {client: holder, key: "0"}, when: {%s: "0"}, for: 2s}
expect:
  planted-renewal-from-memory: [%s]
  redis-setnx-px-lua: [not:double-grant:both-valid]
`
	reg := registry()
	agreesWhereDecided(t, reg, fmt.Sprintf(text, "renewed", "double-grant:both-valid"), 3)
	agreesWhereDecided(t, reg, fmt.Sprintf(text, "holding", "not:double-grant:both-valid"), 3, planted.RenewalFromMemory.Name)
}

// The planted stale-lock reaper (adapters/reaper_wall_clock.py: a waiter
// takes over a lock whose stated expiry has passed by its own wall clock)
// shows once a client's clock runs ahead: a client-clock fault on an
// adapter's client moves the wall clock its process reads (libfaketime,
// which re-reads its offset once a second), and that client, waiting,
// takes a lock whose holder's lease is valid. Ahead for most of the run,
// and with think times: without them the client ahead took the lock
// back at once after each release, the other's acquire waited past its
// lease (counted from when it was asked), and each take-over was of a
// lease already over by its holder's reckoning (outlived, in 2 of 6 runs
// every one of them).
// redis-setnx-px-lua's waiter under the same fault only measures its own
// lease on a clock ahead, which makes no grant early: safe.
func TestReaperShowsOnAWaitersWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("adapters", "reaper_wall_clock.py"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "reaper.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`name: planted-reaper-wall-clock
command: [/usr/bin/python3, %s]
server: redis
nodes: 1
capabilities: [ttl, renewal]
safe: true
`, script)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry()
	if err := adapter.Register(reg, []string{file}); err != nil {
		t.Fatal(err)
	}
	const text = `name: reaper
approaches: [planted-reaper-wall-clock, redis-setnx-px-lua]
workload: {kind: mutex, clients: 2, keys: 1, hold: uniform:200ms-400ms, ttl: 1s, acquire-timeout: 5s, think: uniform:50ms-100ms}
duration: 6s
faults:
  - {fault: client-clock, offset: 2s, target: {client: "0"}, at: 500ms, for: 4500ms}
expect:
  planted-reaper-wall-clock: [double-grant:both-valid]
  redis-setnx-px-lua: [not:double-grant:both-valid]
`
	agreesWhereDecided(t, reg, text, 3)
}

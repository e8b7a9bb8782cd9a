package explore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/workload"
)

// big is a schedule with one fault that matters (the clock set back by 2s
// for a second) among others that do not.
func big() Schedule {
	return Schedule{Approach: "a", Duration: 6 * time.Second, Seed: 3,
		Workload: workload.Spec{Kind: workload.Counter, Clients: 4, Keys: 2, TTL: time.Second, Renew: true,
			Hold: workload.Dist{Kind: "uniform", A: 500 * time.Millisecond, B: time.Second}},
		Faults: []Fault{
			{Kind: "drop-replies", Target: chaos.Selector{Node: chaos.NodeFirst}, At: 700 * time.Millisecond, For: time.Second},
			{Kind: "client-clock", Target: chaos.Selector{Client: chaos.ClientRandom}, Params: []Param{{Name: "offset", Value: "-2s"}}, At: time.Second, For: time.Second},
			{Kind: "server-pause", Target: chaos.Selector{Node: chaos.NodeFirst}, At: 2 * time.Second, For: 1500 * time.Millisecond},
		}}
}

// needsClock is a deterministic stand-in for a lock with a timing bug:
// the violation shows whenever some client's clock is set back by at
// least a second for at least 200 ms, with two clients or more.
func needsClock(s Schedule) bool {
	if s.Workload.Clients < 2 {
		return false
	}
	for _, f := range s.Faults {
		off, _ := time.ParseDuration(f.Param("offset"))
		if f.Kind == "client-clock" && off <= -time.Second && f.For >= 200*time.Millisecond {
			return true
		}
	}
	return false
}

func TestShrinkConvergesToTheSmallestSchedule(t *testing.T) {
	calls := 0
	sh := &Shrinker{Oracle: func(_ context.Context, s Schedule) (Trial, error) {
		calls++
		return Trial{Shown: needsClock(s), Case: fmt.Sprint(calls)}, nil
	}}
	out, err := sh.Shrink(context.Background(), big(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := out.Schedule
	if !out.Confirmed || !needsClock(s) {
		t.Fatalf("confirmed %v; the final schedule does not show it: %s", out.Confirmed, s.Summary())
	}
	f := s.Faults
	if len(f) != 1 || f[0].Kind != "client-clock" || f[0].Param("offset") != "-1s" || f[0].For != 250*time.Millisecond || f[0].At != 200*time.Millisecond {
		t.Errorf("faults: %s", s.Summary())
	}
	w := s.Workload
	if w.Clients != 2 || w.Keys != 1 || w.Kind != workload.Mutex || w.Renew {
		t.Errorf("workload: %s", s.Summary())
	}
	// The run is cut to the last fault's end plus a second (the scale).
	if s.Duration != 1450*time.Millisecond {
		t.Errorf("duration %v, want 1.45s", s.Duration)
	}
	// Every kept removal took two runs, every kept cut (the last step
	// cut the run shorter) three, as the final schedule's hits show.
	if out.Runs != calls || out.Hits != 3 || out.Tries != 3 || out.Runs > 55 {
		t.Errorf("runs %d (oracle calls %d), final %d/%d", out.Runs, calls, out.Hits, out.Tries)
	}
	t.Logf("%d runs, steps: %v", out.Runs, out.Steps)
	if len(out.Steps) == 0 {
		t.Error("no step recorded")
	}
}

// A candidate that takes something away (a fault) and shows the violation
// once and then not (1 of 3 runs) is never kept; one that shows it in 2
// of 3 is. A cut (a time or an option made smaller) is kept only when
// every run shows it.
func TestShrinkKeepsOnlyMajorityReproductions(t *testing.T) {
	// noCuts is big() with nothing to cut first: its faults start as early
	// as a shrink moves them, and it runs no longer than its last fault's
	// end plus the scale, so its first candidate drops a fault.
	noCuts := func() Schedule {
		s := big()
		for i := range s.Faults {
			s.Faults[i].At -= 500 * time.Millisecond
		}
		s.Duration = 4 * time.Second
		return s
	}
	for _, tc := range []struct {
		name    string
		orig    func() Schedule
		pattern []bool // a candidate's runs, in order
		keep    bool
		runs    int // runs a candidate takes
	}{
		{"once, then never", noCuts, []bool{true, false, false}, false, 3},
		{"never", noCuts, []bool{false, false, true}, false, 2},
		{"twice in a row", noCuts, []bool{true, true, false}, true, 2},
		{"two of three", noCuts, []bool{false, true, true}, true, 3},
		{"first and last", noCuts, []bool{true, false, true}, true, 3},
		{"a cut shown in every run", big, []bool{true, true, true}, true, 3},
		{"a cut shown in two of three", big, []bool{true, true, false}, false, 3},
		{"a cut missed first", big, []bool{false, true, true}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.orig()
			seen := map[string]int{}
			var decided []string
			sh := &Shrinker{Oracle: func(_ context.Context, s Schedule) (Trial, error) {
				key := withoutSeed(s)
				if key == withoutSeed(orig) {
					return Trial{Shown: true}, nil
				}
				n := seen[key]
				seen[key]++
				if s.Seed != orig.Seed+uint64(n) {
					t.Errorf("run %d of a candidate has seed %d, want %d (the schedule's plus %d)", n, s.Seed, orig.Seed+uint64(n), n)
				}
				if n == 0 {
					decided = append(decided, key)
				}
				return Trial{Shown: tc.pattern[n]}, nil
			}}
			// Only the first candidate is given a chance: a run limit ends
			// the shrink after it.
			sh.MaxRuns = 1 + tc.runs
			out, err := sh.Shrink(context.Background(), orig, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(decided) != 1 || seen[decided[0]] != tc.runs {
				t.Fatalf("%d candidates tried, the first %d times; want 1, %d times", len(decided), seen[decided[0]], tc.runs)
			}
			kept := len(out.Steps) == 1
			if kept != tc.keep {
				t.Fatalf("kept = %v, want %v (steps %v)", kept, tc.keep, out.Steps)
			}
			if !tc.keep && string(out.Schedule.Scenario("x")) != string(orig.Scenario("x")) {
				t.Error("the schedule changed though no candidate was kept")
			}
			if out.Stopped == "" {
				t.Error("a shrink stopped by its run limit does not say so")
			}
		})
	}
}

// A schedule that does not show the violation again in most runs is not
// shrunk at all.
func TestShrinkRefusesAnUnconfirmedOriginal(t *testing.T) {
	n := 0
	sh := &Shrinker{Oracle: func(_ context.Context, s Schedule) (Trial, error) {
		n++
		return Trial{}, nil
	}}
	out, err := sh.Shrink(context.Background(), big(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Confirmed || !out.Refuted || n != 2 || out.Hits != 1 || out.Tries != 3 || len(out.Steps) != 0 {
		t.Fatalf("confirmed %v after %d runs (%d/%d), steps %v", out.Confirmed, n, out.Hits, out.Tries, out.Steps)
	}
}

// A budget that runs out keeps what was shrunk so far.
func TestShrinkStopsWhenTheBudgetEnds(t *testing.T) {
	left := 7
	sh := &Shrinker{
		Oracle: func(_ context.Context, s Schedule) (Trial, error) { return Trial{Shown: needsClock(s)}, nil },
		Afford: func(Schedule) bool { left--; return left >= 0 },
	}
	out, err := sh.Shrink(context.Background(), big(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Runs != 7 || out.Stopped == "" || !out.Confirmed || len(out.Steps) == 0 || !needsClock(out.Schedule) {
		t.Fatalf("runs %d, stopped %q, steps %v", out.Runs, out.Stopped, out.Steps)
	}
}

// A finding seen again before its own schedule was decided keeps the
// later schedule as a spare, and takes it up at once when its own is
// refuted; one confirmed keeps its own.
func TestRefutedFindingTakesUpASpare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shrunk *Shrunk
		want   bool
	}{
		{"refuted", &Shrunk{Refuted: true}, true},
		{"confirmed", &Shrunk{Confirmed: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Finding{Original: Schedule{Seed: 1}, Seen: 1, hits: 1, tries: 1}
			for seed := uint64(2); seed <= 4; seed++ {
				if f.seenAgain(Schedule{Seed: seed}) {
					t.Fatal("taken up before its own schedule was decided")
				}
			}
			if len(f.spares) != maxRetries || f.Seen != 4 {
				t.Fatalf("%d spares, seen %d; want %d, 4", len(f.spares), f.Seen, maxRetries)
			}
			f.Shrunk = tc.shrunk
			if got := f.refuted(); got != tc.want {
				t.Fatalf("refuted() = %v, want %v", got, tc.want)
			}
			if tc.want && (f.Original.Seed != 2 || f.Shrunk != nil || !f.reshrink || f.Retries != 1 || len(f.spares) != 1) {
				t.Errorf("taken up: seed %d, shrunk %v, reshrink %v, retries %d, %d spares left", f.Original.Seed, f.Shrunk, f.reshrink, f.Retries, len(f.spares))
			}
			if !tc.want && f.Original.Seed != 1 {
				t.Errorf("a confirmed finding changed its schedule to seed %d", f.Original.Seed)
			}
		})
	}
}

// A finding whose schedule was refuted takes up the next schedule that
// shows it, to be shrunk in its turn, at most maxRetries times; one
// confirmed, or not yet shrunk, keeps its own.
func TestRefutedFindingTakesUpTheNextSchedule(t *testing.T) {
	first := Schedule{Approach: "a", Seed: 1}
	for _, tc := range []struct {
		name    string
		shrunk  *Shrunk
		retries int
		want    bool
	}{
		{"not shrunk yet", nil, 0, false},
		{"confirmed", &Shrunk{Confirmed: true}, 0, false},
		{"refuted", &Shrunk{Refuted: true}, 0, true},
		{"refuted, retried once", &Shrunk{Refuted: true}, 1, true},
		{"refuted, out of retries", &Shrunk{Refuted: true}, maxRetries, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Finding{Original: first, Shrunk: tc.shrunk, Retries: tc.retries, Seen: 1, hits: 1, tries: 3}
			next := Schedule{Approach: "a", Seed: 2}
			got := f.seenAgain(next)
			if got != tc.want || f.Seen != 2 {
				t.Fatalf("seenAgain = %v (seen %d), want %v (seen 2)", got, f.Seen, tc.want)
			}
			if !tc.want {
				if f.Original.Seed != 1 || f.reshrink || f.Shrunk != tc.shrunk {
					t.Errorf("kept: schedule seed %d, reshrink %v, shrunk %v", f.Original.Seed, f.reshrink, f.Shrunk)
				}
				return
			}
			if f.Original.Seed != 2 || !f.reshrink || f.Shrunk != nil || f.hits != 1 || f.tries != 1 || f.Retries != tc.retries+1 {
				t.Errorf("taken up: schedule seed %d, reshrink %v, shrunk %v, %d of %d, retries %d",
					f.Original.Seed, f.reshrink, f.Shrunk, f.hits, f.tries, f.Retries)
			}
		})
	}
}

// withoutSeed is s as a scenario file, its seed left out: the runs of one
// schedule differ only in their seeds.
func withoutSeed(s Schedule) string {
	s.Seed = 0
	return string(s.Scenario("x"))
}

// Side by side (a Batch of up to Parallel runs at once) the shrink keeps
// the candidates one run after the other keeps, in fewer rounds, and never
// runs more at once than it was given.
func TestShrinkSideBySideKeepsWhatOneByOneKeeps(t *testing.T) {
	ctx := context.Background()
	one := &Shrinker{Oracle: func(_ context.Context, s Schedule) (Trial, error) { return Trial{Shown: needsClock(s)}, nil }}
	seq, err := one.Shrink(ctx, big(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, parallel := range []int{1, 2, 4, 7} {
		t.Run(fmt.Sprint(parallel), func(t *testing.T) {
			rounds, widest := 0, 0
			sh := &Shrinker{Parallel: parallel, Batch: func(_ context.Context, ss []Schedule) ([]Trial, error) {
				rounds++
				widest = max(widest, len(ss))
				out := make([]Trial, len(ss))
				for i, s := range ss {
					out[i] = Trial{Shown: needsClock(s)}
				}
				return out, nil
			}}
			got, err := sh.Shrink(ctx, big(), 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if withoutSeed(got.Schedule) != withoutSeed(seq.Schedule) || fmt.Sprint(got.Steps) != fmt.Sprint(seq.Steps) {
				t.Fatalf("side by side kept %v: %s; one by one %v: %s", got.Steps, got.Schedule.Summary(), seq.Steps, seq.Schedule.Summary())
			}
			if widest > parallel {
				t.Errorf("%d runs at once, given %d", widest, parallel)
			}
			if got.Hits != seq.Hits || got.Tries != seq.Tries {
				t.Errorf("final %d/%d, one by one %d/%d", got.Hits, got.Tries, seq.Hits, seq.Tries)
			}
			t.Logf("%d runs in %d rounds (one by one: %d runs)", got.Runs, rounds, seq.Runs)
			if parallel >= 4 && 3*rounds > 2*seq.Runs {
				t.Errorf("%d rounds for %d runs one by one: not side by side", rounds, seq.Runs)
			}
		})
	}
}

// More gives the final schedule its further runs side by side, each with
// the next seed, and counts them.
func TestMoreRunsOfTheFinalSchedule(t *testing.T) {
	var seeds []uint64
	sh := &Shrinker{Parallel: 8, Batch: func(_ context.Context, ss []Schedule) ([]Trial, error) {
		out := make([]Trial, len(ss))
		for i, s := range ss {
			seeds = append(seeds, s.Seed)
			out[i] = Trial{Shown: s.Seed%2 == 0, Case: fmt.Sprint(s.Seed)}
		}
		return out, nil
	}}
	out := Shrunk{Schedule: Schedule{Seed: 10}, Confirmed: true, Hits: 2, Tries: 2}
	if err := sh.More(context.Background(), &out, 5); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seeds) != "[12 13 14]" || out.Tries != 5 || out.Hits != 4 || out.Runs != 3 || out.Last.Case != "14" {
		t.Fatalf("seeds %v; %d of %d, %d runs, last %q", seeds, out.Hits, out.Tries, out.Runs, out.Last.Case)
	}
}

// A step kept on lucky runs is taken back when the schedule it made shows
// the violation in no more than half of its measuring runs: here one key
// shows it only in the first two runs of a schedule (its seed and the
// next), two keys always. The schedule before "one key" is measured in its
// turn and stays; the original stays however it measures.
func TestMoreTakesBackAStepKeptOnLuckyRuns(t *testing.T) {
	sh, out := shrunkOnLuckyRuns(t, func() error { return nil })
	if err := sh.More(context.Background(), &out, 5); err != nil {
		t.Fatal(err)
	}
	if out.Schedule.Workload.Keys != 2 || !needsClock(out.Schedule) || out.Hits != 5 || out.Tries != 5 {
		t.Fatalf("kept %s, shown in %d of %d", out.Schedule.Summary(), out.Hits, out.Tries)
	}
	if len(out.Undone) == 0 || !strings.HasPrefix(out.Undone[len(out.Undone)-1], "one key (shown in 2 of 5)") {
		t.Errorf("undone %q", out.Undone)
	}
	for _, st := range out.Steps {
		if st == "one key" {
			t.Errorf("steps still hold one key: %q", out.Steps)
		}
	}

	// The original alone: it stays, shown in 2 of 5.
	orig := big()
	orig.Workload.Keys = 1
	got, err := sh.Reproduce(context.Background(), orig)
	if err != nil || !got.Confirmed {
		t.Fatalf("original not confirmed: %v %+v", err, got)
	}
	if err := sh.More(context.Background(), &got, 5); err != nil {
		t.Fatal(err)
	}
	if got.Hits != 2 || got.Tries != 5 || len(got.Undone) != 0 || got.Schedule.Workload.Keys != 1 {
		t.Errorf("original: %d of %d, undone %q, %s", got.Hits, got.Tries, got.Undone, got.Schedule.Summary())
	}
}

// A budget that ends the measuring runs does not leave a step measured at
// half or less in place: the schedule kept before it is the file.
func TestMoreTakesBackAStepWhenTheBudgetEnds(t *testing.T) {
	measuring := false
	sh, out := shrunkOnLuckyRuns(t, func() error {
		if measuring {
			return errStop("the budget")
		}
		return nil
	})
	measured := key(out.Schedule)
	steps := len(out.Steps)
	measuring = true
	if err := sh.More(context.Background(), &out, 5); err != nil {
		t.Fatal(err)
	}
	// One step back: the budget is gone, so the schedule before it is
	// not measured in its turn.
	if key(out.Schedule) == measured || len(out.Undone) != 1 || len(out.Steps) != steps-1 || !strings.HasSuffix(out.Undone[0], "(shown in 2 of 5)") {
		t.Fatalf("kept %s, shown in %d of %d, undone %q", out.Schedule.Summary(), out.Hits, out.Tries, out.Undone)
	}
}

// A fault on a random client is tried on each client by name: a run draws
// its random client from its own seed, and a file whose fault must land on
// one client reproduces only when it names it. Each such candidate reads
// back as a scenario that targets that client.
func TestShrinkNamesARandomClient(t *testing.T) {
	reg := all.Registry()
	s := Schedule{Approach: "redis-setnx-px-lua", Duration: 3 * time.Second, Seed: 5,
		Workload: workload.Spec{Kind: workload.Mutex, Clients: 3, Keys: 1, TTL: time.Second, Hold: workload.Dist{Kind: "fixed", A: 20 * time.Millisecond}},
		Faults: []Fault{{Kind: "slow-replies", Target: chaos.Selector{Client: chaos.ClientRandom, Node: chaos.NodeAll},
			Params: []Param{{Name: "latency", Value: "200ms"}}, At: 200 * time.Millisecond, For: time.Second}}}
	named := 0
	for _, c := range (&Shrinker{}).candidates(s) {
		f := c.s.Faults
		if len(f) != 1 || f[0].Target.Client == chaos.ClientRandom {
			continue
		}
		if !c.cut {
			t.Errorf("%q is not marked a cut: it must show in every run", c.what)
		}
		want := fmt.Sprint(named)
		if f[0].Target.Client != want || f[0].Target.Node != chaos.NodeAll {
			t.Fatalf("%q targets %s, want client %s on every node", c.what, f[0].Target, want)
		}
		sc, err := scenario.Parse(c.s.Scenario("x"), reg)
		if err != nil {
			t.Fatalf("%q does not read back: %v", c.what, err)
		}
		if got := sc.Faults[0].Step.Target.Client; got != want {
			t.Errorf("%q reads back on client %q", c.what, got)
		}
		named++
	}
	if named != 3 {
		t.Errorf("%d candidates name a client, want one per client (3)", named)
	}
}

// No run of a shrink repeats another: two paths of changes can reach the
// same schedule (a client fewer, then a fault dropped, or the other way
// round), and a schedule refused once is not given a second chance, which
// for a cut that must show in every run would let a fluke through.
func TestShrinkRunsNoScheduleTwice(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		seen := map[string]int{}
		sh := &Shrinker{MaxRuns: 60, Oracle: func(_ context.Context, s Schedule) (Trial, error) {
			k := key(s)
			if seen[k]++; seen[k] > 1 {
				t.Fatalf("seed %d: run %d of the shrink ran again: %s (seed %d)", seed, len(seen), s.Summary(), s.Seed)
			}
			return Trial{Shown: rng.Float64() < 0.85}, nil
		}}
		if _, err := sh.Shrink(context.Background(), big(), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// shrunkOnLuckyRuns shrinks big() where one key shows the violation only
// in the first two runs of a schedule (its seed and the next), two keys
// always; each batch ends with stop's error.
func shrunkOnLuckyRuns(t *testing.T, stop func() error) (*Shrinker, Shrunk) {
	t.Helper()
	base := big().Seed
	shown := func(s Schedule) bool {
		return needsClock(s) && (s.Workload.Keys > 1 || s.Seed < base+2)
	}
	sh := &Shrinker{Parallel: 4, Batch: func(_ context.Context, ss []Schedule) ([]Trial, error) {
		out := make([]Trial, len(ss))
		for i, s := range ss {
			out[i] = Trial{Shown: shown(s), Case: fmt.Sprint(s.Seed)}
		}
		return out, stop()
	}}
	out, err := sh.Shrink(context.Background(), big(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Schedule.Workload.Keys != 1 {
		t.Fatalf("the shrink did not take one key on its lucky runs: %s", out.Schedule.Summary())
	}
	return sh, out
}

// The final schedule's control runs it with no fault, as many times as it
// was measured, seeds as a file's --runs gives them: a violation that shows
// there too is counted, one the faults make is not; a schedule with no
// fault, or not confirmed, has no control.
func TestFaultlessRunsTheFinalScheduleWithNoFault(t *testing.T) {
	for _, tt := range []struct {
		name      string
		raceShows func(seed uint64) bool // the violation with no fault
		schedule  Schedule
		confirmed bool
		wantSeeds string
		wantHits  int
		wantTries int
	}{
		{"the faults make it", func(uint64) bool { return false }, big(), true, "[3 4 5 6 7]", 0, 5},
		{"a race under load", func(seed uint64) bool { return seed%2 == 1 }, big(), true, "[3 4 5 6 7]", 3, 5},
		{"no fault to take away", func(uint64) bool { return true }, Schedule{Seed: 3}, true, "[]", 0, 0},
		{"not confirmed", func(uint64) bool { return true }, big(), false, "[]", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seeds := []uint64{}
			sh := &Shrinker{Parallel: 2, Batch: func(_ context.Context, ss []Schedule) ([]Trial, error) {
				out := make([]Trial, len(ss))
				for i, s := range ss {
					if len(s.Faults) != 0 {
						t.Fatalf("a control run with %d faults", len(s.Faults))
					}
					seeds = append(seeds, s.Seed)
					out[i] = Trial{Shown: needsClock(s) || tt.raceShows(s.Seed)}
				}
				return out, nil
			}}
			out := Shrunk{Schedule: tt.schedule, Confirmed: tt.confirmed, Hits: 5, Tries: 5}
			if err := sh.Faultless(context.Background(), &out, 5); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(seeds) != tt.wantSeeds || out.WithoutFaults != (Control{tt.wantHits, tt.wantTries}) || out.Runs != tt.wantTries {
				t.Fatalf("seeds %v, control %+v, %d runs; want seeds %s, %d of %d", seeds, out.WithoutFaults, out.Runs, tt.wantSeeds, tt.wantHits, tt.wantTries)
			}
			if len(out.Schedule.Faults) != len(tt.schedule.Faults) {
				t.Fatal("the control changed the final schedule")
			}
		})
	}
}

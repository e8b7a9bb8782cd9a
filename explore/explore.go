package explore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
)

// Config is one exploration.
type Config struct {
	Registry   *impls.Registry
	Approaches []string
	Faults     []string // only these fault kinds (none: every kind an approach can take)
	Budget     time.Duration
	Seed       uint64
	Steer      bool // favour schedules that reached rare transitions (false: dice only)
	Expect     matrix.Expectations
	ResultsDir string
	External   *cluster.ExternalConfig
	Docker     *runner.Docker
	// Runner runs the cases (its Log, WorkerArgv, HealthTimeout); its
	// Progress is explore's to set.
	Runner *runner.Runner
	// Runs is how many runs decide a shrink candidate (default 3).
	Runs int
	// Parallel is how many cases run side by side (default
	// DefaultParallel; 1: one at a time): exploring runs, and the runs
	// that decide shrink candidates.
	Parallel int
	// Progress is told what explore is doing, a few times a second.
	Progress func(Progress)
	// Command is the command line, for the results.
	Command string
}

// Progress is where an exploration stands.
type Progress struct {
	Runs, ShrinkRuns int
	Findings, New    int
	Left             time.Duration
	Doing            string // the case running now and what it is
	Case             runner.Status
}

// Finding is one class of violation of one approach.
type Finding struct {
	Approach string
	Class    verdict.Outcome
	Known    bool
	Why      string // the rule that predicts it, or why none does
	// Run is the number of the exploring run that first showed it, After
	// how long into the exploration that run ended; Case is its case.
	Run   int
	After time.Duration
	Case  string
	Seen  int // exploring runs that showed it
	Proof string
	// Stated is the outcome its scenario file expects (Sighting.Stated).
	Stated verdict.Outcome
	// Also are the consequences the run showed beside it.
	Also     []verdict.Outcome
	Original Schedule
	Shrunk   *Shrunk
	File     string // its scenario file, relative to the results folder
	// Unmasked: found by running a known finding's schedule without the
	// faults whose rules predicted it (see unmask).
	Unmasked bool
	// hits and tries are the runs of Original that showed it and that it
	// had before its shrink (the run that found it: 1 of 1).
	hits, tries int
	// Retries counts the schedules taken up again after one was refuted;
	// reshrink marks the finding as waiting for a shrink of its new one.
	Retries  int
	reshrink bool
	// spares are schedules of later exploring runs that showed it before
	// its own was decided (a batch's other runs, those while it shrank):
	// one is taken up at once if its own is refuted.
	spares []Schedule
}

// maxRetries bounds how many times a refuted finding takes up another
// schedule that showed it.
const maxRetries = 2

// seenAgain notes another exploring run, of schedule s, that showed f. A
// finding whose schedule was refuted (shown again in
// too few of its re-runs: a timing that one run hit and most do not) takes
// this one up instead, to be confirmed and shrunk in its turn: a class that
// several runs show is not left unshrunk because the first of them was the
// luckiest. It reports whether it did.
func (f *Finding) seenAgain(s Schedule) bool {
	f.Seen++
	if f.Shrunk == nil {
		// Not decided yet: kept in case its own schedule is refuted.
		if len(f.spares) < maxRetries {
			f.spares = append(f.spares, s)
		}
		return false
	}
	if !f.Shrunk.Refuted || f.Retries >= maxRetries {
		return false
	}
	f.takeUp(s)
	return true
}

// takeUp makes s the finding's schedule, to be confirmed and shrunk.
// Run, Case and Proof stay the first sighting's; the shrink's last run
// that shows it gives the file its proof.
func (f *Finding) takeUp(s Schedule) {
	f.Retries++
	f.Original, f.Shrunk, f.hits, f.tries, f.reshrink = s, nil, 1, 1, true
}

// refuted takes up a spare schedule when the finding's own was refuted;
// it reports whether it did.
func (f *Finding) refuted() bool {
	if f.Shrunk == nil || !f.Shrunk.Refuted || f.Retries >= maxRetries || len(f.spares) == 0 {
		return false
	}
	s := f.spares[0]
	f.spares = f.spares[1:]
	f.takeUp(s)
	return true
}

// Schedule is the finding's smallest schedule so far.
func (f *Finding) Schedule() Schedule {
	if f.Shrunk != nil && f.Shrunk.Confirmed {
		return f.Shrunk.Schedule
	}
	return f.Original
}

// Result is what an exploration found.
type Result struct {
	Dir        string
	Seed       uint64
	Budget     time.Duration
	Elapsed    time.Duration
	Runs       int // exploring runs
	ShrinkRuns int
	// Stalled counts exploring runs whose violations are not findings:
	// the lab itself stalled during the events that show them (a worker
	// or locklab stood still, so a holder may have "outlived" its lease
	// only in the lab's own time).
	Stalled     int
	Parallel    int        // cases side by side
	Findings    []*Finding // new ones first
	Approaches  []*Search
	Interrupted bool
	Outcome     *runner.Outcome
}

// Search is one approach's part of an exploration.
type Search struct {
	Approach string
	Profile  Profile
	Runs     int
	Coverage *Coverage
	searcher *Searcher
	overhead time.Duration // a case's time beyond its duration, measured
	approach impls.Approach
}

// New counts the new findings.
func (r *Result) New() int {
	n := 0
	for _, f := range r.Findings {
		if !f.Known {
			n++
		}
	}
	return n
}

// DefaultParallel is how many cases an exploration runs at once: two per
// CPU. A case mostly waits on its faults and its clients' holds, but its
// clients are processes of their own, and a lab that stalls makes its
// verdicts undecided.
func DefaultParallel() int { return max(2, 2*runtime.NumCPU()) }

// reproRuns is how many runs of a finding's final schedule say how often
// it shows the violation.
const reproRuns = 5

// shares of the budget: a new finding is shrunk at once, for at most
// shrinkShare of the budget; known ones are shrunk in the last knownShare.
const (
	shrinkShare = 0.3
	knownShare  = 0.3
	// firstOverhead is a case's cost beyond its duration before one was
	// measured: worker processes starting, health checks, the check.
	firstOverhead = 3 * time.Second
	// closing is kept back from the budget for writing what was found.
	closing = time.Second
)

// explorer is one exploration under way.
type explorer struct {
	cfg      Config
	cs       cases
	sess     *runner.Session
	res      *Result
	start    time.Time
	deadline time.Time
	// mu guards now, what the progress reports (the runner reports a
	// case's progress from a goroutine of its own).
	mu  sync.Mutex
	now Progress
	// unmasks are known findings' schedules without the faults their
	// rules spoke for, to run before the next exploring case; tried
	// counts them per approach and class, and remembers what was tried.
	unmasks []unmasking
	tried   map[string]int
	// deferred are exploring runs waiting for a batch of their own: they
	// ask for servers run otherwise than those running (nextBatch), which
	// running tells (the session's Running).
	deferred []exploring
	running  func() (runner.ServerOptions, bool)
}

// Run explores until the budget is spent or ctx ends (Ctrl-C): every
// finding so far is kept, shrunk or not. The error is the context's when
// it ended, or what stopped the runs (servers that would not start).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Budget <= 0 {
		return nil, usage(fmt.Errorf("--budget %v: must be positive", cfg.Budget))
	}
	if len(cfg.Approaches) == 0 {
		return nil, usage(fmt.Errorf("no approach (known: %v)", cfg.Registry.Names()))
	}
	e := &explorer{cfg: cfg, cs: cases{reg: cfg.Registry, external: cfg.External, docker: cfg.Docker},
		start: time.Now(), res: &Result{Seed: cfg.Seed, Budget: cfg.Budget}, tried: map[string]int{}}
	e.deadline = e.start.Add(cfg.Budget - closing)
	var templates []runner.Case
	for i, name := range cfg.Approaches {
		a, err := cfg.Registry.Get(name)
		if err != nil {
			return nil, usage(err)
		}
		p, err := e.cs.profile(a, cfg.Faults)
		if err != nil {
			return nil, usage(fmt.Errorf("%s: %w", name, err))
		}
		cov := NewCoverage()
		e.res.Approaches = append(e.res.Approaches, &Search{Approach: name, Profile: p, Coverage: cov, overhead: firstOverhead,
			approach: a, searcher: NewSearcher(p, cfg.Seed+uint64(i), cfg.Steer, cov)})
		c, err := e.cs.caseOf(Generate(p, cfg.Seed, 0), name)
		if err != nil {
			return nil, usage(err)
		}
		templates = append(templates, c)
	}
	if e.cfg.Parallel <= 0 {
		e.cfg.Parallel = DefaultParallel()
	}
	r := cfg.Runner
	if r == nil {
		r = &runner.Runner{}
	}
	r.Progress = e.caseProgress
	r.Parallel, r.MaxCases = e.cfg.Parallel > 1, e.cfg.Parallel
	e.res.Parallel = e.cfg.Parallel
	sess, err := r.Open(ctx, runner.Plan{Kind: "explore", Cases: templates, ResultsDir: cfg.ResultsDir, External: cfg.External,
		Docker: cfg.Docker, Lean: true, Config: e.config()})
	if err != nil {
		return nil, err
	}
	e.sess, e.running = sess, sess.Running
	e.res.Dir = sess.Dir()
	runErr := e.loop(ctx)
	e.res.Elapsed = time.Since(e.start)
	e.res.Interrupted = ctx.Err() != nil
	slices.SortStableFunc(e.res.Findings, func(a, b *Finding) int {
		switch {
		case a.Known == b.Known:
			return 0
		case !a.Known:
			return -1
		}
		return 1
	})
	for _, f := range e.res.Findings {
		if err := e.writeFound(f); err != nil && runErr == nil {
			runErr = err
		}
	}
	out, err := sess.Close(ctx, runErr)
	e.res.Outcome = out
	if out == nil {
		// Nothing ran (the servers never came up): no folder is left.
		e.res.Dir = ""
	} else {
		if werr := writeResults(e.res, cfg); werr != nil && err == nil {
			err = werr
		}
	}
	if err == nil && runErr != nil {
		err = runErr
	}
	return e.res, err
}

// loop runs cases until the budget is spent: a new finding is shrunk as
// soon as it is found; in the last part of the budget, the known ones.
func (e *explorer) loop(ctx context.Context) error {
	ctx, cancel := context.WithDeadline(ctx, e.deadline)
	defer cancel()
	shrunk := map[*Finding]bool{}
	next := 0
	for ctx.Err() == nil {
		var todo *Finding
		for _, f := range e.res.Findings {
			if (!shrunk[f] || f.reshrink) && (!f.Known || time.Until(e.deadline) < time.Duration(knownShare*float64(e.cfg.Budget))) {
				todo = f
				break
			}
		}
		if todo != nil {
			shrunk[todo], todo.reshrink = true, false
			if err := e.shrink(ctx, todo); err != nil {
				return e.ended(ctx, err)
			}
			continue
		}
		if len(e.unmasks) > 0 {
			u := e.unmasks[0]
			e.unmasks = e.unmasks[1:]
			if err := e.unmask(ctx, u); err != nil {
				return e.ended(ctx, err)
			}
			continue
		}
		batch, err := e.nextBatch(&next)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			if len(e.deferred) > 0 {
				continue // those left may fit where these did not
			}
			return nil
		}
		if err := e.explore(ctx, batch); err != nil {
			return e.ended(ctx, err)
		}
	}
	return nil
}

// nextBatch draws the next batch of exploring runs, approaches taking
// turns (one whose case no longer fits the budget gives its turn away).
// A batch runs on one set of servers: a schedule that asks for servers run
// otherwise than those running now (under libfaketime, for a server clock
// jump) waits with others like it until they fill a batch of their own, so
// the servers are started anew once for a batch, not for every such case
// (a ZooKeeper ensemble's restart cost a search of zk-ephemeral a third of
// its budget).
func (e *explorer) nextBatch(next *int) ([]exploring, error) {
	cur, running := e.running()
	if len(e.deferred) >= e.cfg.Parallel || (!running && len(e.deferred) > 0) {
		return e.takeDeferred(), nil
	}
	var batch []exploring
	for len(batch) < e.cfg.Parallel && len(e.deferred) < e.cfg.Parallel {
		placed := false
		for range e.res.Approaches {
			srch := e.res.Approaches[*next%len(e.res.Approaches)]
			*next++
			s, origin := srch.searcher.Next()
			if !e.afford(srch, s) {
				continue
			}
			c, err := e.cs.caseOf(s, "next")
			if err != nil {
				return nil, err
			}
			x := exploring{srch: srch, s: s, origin: origin}
			if o := c.ServerOptions(); running && o != cur {
				e.deferred = append(e.deferred, x)
			} else {
				batch = append(batch, x)
				cur, running = o, true
			}
			placed = true
			break
		}
		if !placed {
			break
		}
	}
	if len(batch) == 0 {
		// Every run drawn waits for other servers, or none fits any more.
		return e.takeDeferred(), nil
	}
	return batch, nil
}

// takeDeferred is a batch of the deferred runs that still fit the budget.
func (e *explorer) takeDeferred() []exploring {
	n := min(len(e.deferred), e.cfg.Parallel)
	batch := slices.DeleteFunc(slices.Clone(e.deferred[:n]), func(x exploring) bool { return !e.afford(x.srch, x.s) })
	e.deferred = slices.Delete(e.deferred, 0, n)
	return batch
}

// exploring is one exploring run of a batch.
type exploring struct {
	srch   *Search
	s      Schedule
	origin Origin
	n      int    // its number among the exploring runs
	name   string // its case's
}

// ended is what a loop's error means: the budget's end is no error.
func (e *explorer) ended(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(e.deadline) {
		return nil
	}
	return err
}

// afford reports whether one more run of s fits in the budget.
func (e *explorer) afford(srch *Search, s Schedule) bool {
	return time.Now().Add(cost(s) + srch.overhead).Before(e.deadline)
}

// cost is what a run of s takes at least: its duration, and the last hold,
// which a holder finishes after the run's end.
func cost(s Schedule) time.Duration { return s.Duration + max(s.Workload.Hold.A, s.Workload.Hold.B) }

// runs runs schedules ss of srch's approach side by side as cases
// named names (each first passed to adjust, when set), and measures what a
// batch costs beyond its longest schedule.
func (e *explorer) runs(ctx context.Context, srch *Search, ss []Schedule, names []string, adjust func(c *runner.Case)) ([]runner.CaseResult, error) {
	cases := make([]runner.Case, len(ss))
	for i, s := range ss {
		c, err := e.cs.caseOf(s, names[i])
		if err != nil {
			return nil, err
		}
		if adjust != nil {
			adjust(&c)
		}
		cases[i] = c
	}
	t0 := time.Now()
	res, err := e.sess.RunCases(ctx, cases)
	if err == nil && ctx.Err() == nil {
		took := time.Since(t0) - cost(longest(ss))
		srch.overhead = (srch.overhead + max(took, 0)) / 2
	}
	return res, err
}

// explore runs a batch of exploring cases side by side and looks at
// what each showed, in order.
func (e *explorer) explore(ctx context.Context, batch []exploring) error {
	var whats []string
	for i := range batch {
		x := &batch[i]
		e.res.Runs++
		x.srch.Runs++
		x.n = e.res.Runs
		x.name = fmt.Sprintf("e%04d", x.n)
		how := fmt.Sprintf("fresh #%d", x.origin.Fresh)
		if x.origin.Fresh < 0 {
			how = fmt.Sprintf("mutant #%d", x.origin.Mutant)
		}
		whats = append(whats, fmt.Sprintf("%s %s (%s): %s", x.name, x.srch.Approach, how, x.s.Summary()))
	}
	doing := whats[0]
	if len(whats) > 1 {
		doing = fmt.Sprintf("%s..%s side by side; %s", batch[0].name, batch[len(batch)-1].name, strings.Join(whats, "; "))
	}
	e.begin(doing)
	cases := make([]runner.Case, len(batch))
	longestRun := batch[0].s
	for i, x := range batch {
		c, err := e.cs.caseOf(x.s, x.name)
		if err != nil {
			return err
		}
		cases[i] = c
		if cost(x.s) > cost(longestRun) {
			longestRun = x.s
		}
	}
	t0 := time.Now()
	res, err := e.sess.RunCases(ctx, cases)
	if err != nil {
		return err
	}
	if ctx.Err() == nil {
		// The batch's time beyond its longest schedule is what each of
		// its approaches' cases costs beyond its own.
		took := max(time.Since(t0)-cost(longestRun), 0)
		for _, x := range batch {
			x.srch.overhead = (x.srch.overhead + took) / 2
		}
	}
	for i, x := range batch {
		if res[i].Run.Case == "" {
			// Never started: the budget or a Ctrl-C ended the batch.
			e.res.Runs--
			x.srch.Runs--
			continue
		}
		if err := e.examine(x.srch, x.s, x.n, x.name, res[i]); err != nil {
			return err
		}
	}
	return nil
}

// examine looks at what exploring run n (case name, of schedule s)
// showed: the steering's feedback, and its findings.
func (e *explorer) examine(srch *Search, s Schedule, n int, name string, res runner.CaseResult) error {
	srch.searcher.Feedback(n, s, transitions(res.Events))
	if res.Verdict.LabStalled {
		e.res.Stalled++
		return nil
	}
	ss := sightings(res.Check, res.Events)
	primary, also := primaries(ss)
	kinds := faultKinds(res.Events)
	if len(kinds) == 0 {
		kinds = s.Kinds()
	}
	allKnown := true
	for _, p := range primary {
		// One finding per class and approach, and per judgement: a class
		// known under some faults and new under others is two findings.
		j := e.cfg.Expect.Judge(srch.approach, kinds, s.Workload, p.Class)
		allKnown = allKnown && j.Known
		if j.Known {
			e.queueUnmask(srch, p.Class, s, j.Because, n)
		}
		if f := e.finding(srch.Approach, p.Class, j.Known); f != nil {
			if f.seenAgain(s) {
				if err := e.writeFound(f); err != nil {
					return err
				}
			}
			continue
		}
		f := &Finding{Approach: srch.Approach, Class: p.Class, Known: j.Known, Why: j.Why, Run: n, After: time.Since(e.start),
			Case: name, Seen: 1, Proof: p.Proof, Stated: p.Stated, Original: s, hits: 1, tries: 1}
		for _, a := range also {
			f.Also = append(f.Also, a.Class)
		}
		e.res.Findings = append(e.res.Findings, f)
		if err := e.writeFound(f); err != nil {
			return err
		}
	}
	// A consequence no rule predicts, beside a double grant a rule does
	// predict, is a finding of its own (a fenced store that lost an
	// update); beside a new one, it is part of that one.
	for _, a := range also {
		if !allKnown {
			break
		}
		if f := e.finding(srch.Approach, a.Class, false); f != nil {
			f.Seen++
			continue
		}
		if j := e.cfg.Expect.Judge(srch.approach, kinds, s.Workload, a.Class); !j.Known {
			f := &Finding{Approach: srch.Approach, Class: a.Class, Why: j.Why, Run: n, After: time.Since(e.start),
				Case: name, Seen: 1, Proof: a.Proof, Stated: a.Stated, Original: s, hits: 1, tries: 1}
			e.res.Findings = append(e.res.Findings, f)
			if err := e.writeFound(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *explorer) finding(approach string, c verdict.Outcome, known bool) *Finding {
	for _, f := range e.res.Findings {
		if f.Approach == approach && f.Class == c && f.Known == known {
			return f
		}
	}
	return nil
}

func (e *explorer) search(approach string) *Search {
	for _, s := range e.res.Approaches {
		if s.Approach == approach {
			return s
		}
	}
	return nil
}

// shrink shrinks finding f, each candidate run on the session.
func (e *explorer) shrink(ctx context.Context, f *Finding) error {
	srch := e.search(f.Approach)
	idx := slices.Index(e.res.Findings, f) + 1
	prefix := fmt.Sprintf("f%d-s", idx)
	if f.Retries > 0 {
		// A schedule taken up again: its runs are named apart from the
		// refuted one's (f1r1-s001...).
		prefix = fmt.Sprintf("f%dr%d-s", idx, f.Retries)
	}
	sh := e.shrinker(srch, f.Class, f.Stated, prefix, "shrinking")
	out, err := sh.Shrink(ctx, f.Original, f.hits, f.tries)
	if err == nil {
		// How often the final schedule shows it: more runs of it, while
		// the shrink's share of the budget lasts.
		err = sh.More(ctx, &out, reproRuns)
	}
	f.Shrunk = &out
	if out.Confirmed && (len(out.Steps) > 0 || f.Retries > 0) {
		// Judged again on what is left (a known class may turn out new
		// once the faults that a rule spoke for are gone), or on the
		// schedule taken up after the first was refuted.
		j := e.cfg.Expect.Judge(srch.approach, out.Schedule.Kinds(), out.Schedule.Workload, f.Class)
		f.Known, f.Why = j.Known, j.Why
	}
	// Refuted: a later run that showed it (in the same batch, or while
	// this shrink ran) gives it another schedule, shrunk in its turn.
	f.refuted()
	if werr := e.writeFound(f); werr != nil && err == nil {
		err = werr
	}
	return err
}

// shrinker runs schedules of srch's approach for class c (stated so in a
// scenario file; "": not known yet), its cases named prefix and a number,
// side by side as the exploration runs cases, for at most shrinkShare of
// the budget from now. Each run ends once it showed the class (it is run
// to learn that, and nothing after it).
func (e *explorer) shrinker(srch *Search, c, stated verdict.Outcome, prefix, doing string) *Shrinker {
	limit := time.Now().Add(time.Duration(shrinkShare * float64(e.cfg.Budget)))
	k := 0
	return &Shrinker{Runs: e.cfg.Runs, Scale: srch.Profile.Scale, Parallel: e.cfg.Parallel,
		Afford: func(s Schedule) bool {
			return e.afford(srch, s) && time.Now().Add(cost(s)+srch.overhead).Before(limit)
		},
		Batch: func(ctx context.Context, ss []Schedule) ([]Trial, error) {
			names := make([]string, len(ss))
			for i := range ss {
				k++
				names[i] = fmt.Sprintf("%s%03d", prefix, k)
			}
			what := names[0]
			if len(names) > 1 {
				what += ".." + names[len(names)-1]
			}
			e.begin(fmt.Sprintf("%s: %s %s of %s (%d faults, %v)", what, doing, c, srch.Approach, len(ss[0].Faults), ss[0].Duration))
			res, err := e.runs(ctx, srch, ss, names, func(rc *runner.Case) {
				if stated != "" {
					rc.Expect = verdict.Expectation{Outcomes: []verdict.Outcome{stated}}
					rc.EndWhenAnswered = true
				}
			})
			if err != nil {
				return nil, err
			}
			var ts []Trial
			for i, r := range res {
				if r.Run.Case == "" {
					break // never started: the budget or a Ctrl-C ended the batch
				}
				ts = append(ts, trial(r, names[i], c))
			}
			e.res.ShrinkRuns += len(ts)
			return ts, nil
		}}
}

// trial is what case name's result says of class c.
func trial(res runner.CaseResult, name string, c verdict.Outcome) Trial {
	if res.Verdict.LabStalled {
		// The lab stood still during what decides it: not a
		// reproduction (nor anything else).
		return Trial{Case: name}
	}
	for _, x := range sightings(res.Check, res.Events) {
		if x.Class == c {
			return Trial{Shown: true, Case: name, Proof: x.Proof, Stated: x.Stated}
		}
	}
	return Trial{Case: name}
}

// begin notes the case about to run and tells the caller.
func (e *explorer) begin(doing string) {
	e.mu.Lock()
	e.now = Progress{Runs: e.res.Runs, ShrinkRuns: e.res.ShrinkRuns, Findings: len(e.res.Findings), New: e.res.New(), Doing: doing}
	e.mu.Unlock()
	e.caseProgress(runner.Status{})
}

// caseProgress tells the caller where things stand, with the running
// case's own progress (the runner calls it a few times a second).
func (e *explorer) caseProgress(st runner.Status) {
	if e.cfg.Progress == nil {
		return
	}
	e.mu.Lock()
	p := e.now
	e.mu.Unlock()
	p.Left, p.Case = max(time.Until(e.deadline.Add(closing)), 0), st
	e.cfg.Progress(p)
}

// config is the exploration's settings, for results.json.
func (e *explorer) config() map[string]any {
	c := e.cfg
	return map[string]any{"approaches": c.Approaches, "faults": c.Faults, "budget": c.Budget.String(), "seed": c.Seed,
		"steer": c.Steer, "runs_per_candidate": (&Shrinker{Runs: c.Runs}).runs(), "parallel": e.cfg.Parallel, "command": c.Command}
}

// writeFound writes finding f's scenario file, atomically.
func (e *explorer) writeFound(f *Finding) error {
	name := filepath.Join("found", foundName(f)+".yaml")
	if f.File != "" && f.File != name {
		// Judged again after its shrink: the file is renamed.
		if err := os.Remove(filepath.Join(e.res.Dir, f.File)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("results: %w", err)
		}
	}
	f.File = name
	return writeFileAtomic(filepath.Join(e.res.Dir, f.File), f.scenario(e.res))
}

// usageError is bad usage (runner.ErrUsage), its message unchanged.
type usageError struct{ err error }

func (u usageError) Error() string   { return u.err.Error() }
func (u usageError) Unwrap() []error { return []error{runner.ErrUsage, u.err} }

func usage(err error) error { return usageError{err} }

// writeFileAtomic writes data through report's atomic writer, making the
// folder first.
func writeFileAtomic(path string, data []byte) error {
	if err := mkdirFor(path); err != nil {
		return err
	}
	return report.WriteFileAtomic(path, data)
}

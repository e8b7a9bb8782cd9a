package explore

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
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
	// Runs is how many runs decide a shrink candidate, 1..15 (0 in a
	// Config given to Run: 3).
	Runs int
	// Parallel is how many cases run side by side, 1..64 (1: one at a
	// time; 0 in a Config given to Run: DefaultParallel): exploring runs,
	// and the runs that decide shrink candidates.
	Parallel int
	// StopAfterNew ends the search once this many new findings are
	// confirmed and shrunk (0: search the whole budget): a gate wants the
	// first unknown bug, not the rest of the budget spent after it.
	StopAfterNew int
	// Progress is told what explore is doing, a few times a second.
	Progress func(Progress)
	// Command is the command line, for the results.
	Command string
}

// Validate says whether c is an exploration to run: an approach, a
// positive budget, 1..15 runs to decide a shrink candidate and 1..64 cases
// side by side. Run fills Runs and Parallel left zero before it validates.
func (c Config) Validate() error {
	switch {
	case len(c.Approaches) == 0:
		var known []string
		if c.Registry != nil {
			known = c.Registry.Names()
		}
		return fmt.Errorf("--approach: which approach to explore (known: %s)", strings.Join(known, ", "))
	case c.Budget <= 0:
		return fmt.Errorf("--budget %v: must be positive", c.Budget)
	case c.Runs < 1 || c.Runs > maxRuns:
		return fmt.Errorf("--runs %d: want 1..%d", c.Runs, maxRuns)
	case c.Parallel < 1 || c.Parallel > maxParallel:
		return fmt.Errorf("--parallel %d: want 1..%d", c.Parallel, maxParallel)
	case c.StopAfterNew < 0:
		return fmt.Errorf("--stop-after-new %d: want 0 (search the whole budget) or more", c.StopAfterNew)
	}
	return nil
}

// withDefaults is c with Runs and Parallel left zero filled.
func (c Config) withDefaults() Config {
	if c.Runs == 0 {
		c.Runs = (&Shrinker{}).runs()
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel()
	}
	return c
}

// Progress is where an exploration stands.
type Progress struct {
	Runs, ShrinkRuns int
	Findings, New    int
	Left             time.Duration
	Doing            string // the case running now and what it is
	Case             runner.Status
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
	// StoppedEarly: StopAfterNew new findings were confirmed and shrunk
	// before the budget ran out.
	StoppedEarly bool
	Outcome      *runner.Outcome
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

// confirmedNew counts the new findings whose shrink confirmed them.
func (r *Result) confirmedNew() int {
	n := 0
	for _, f := range r.Findings {
		if !f.Known && f.Shrunk != nil && f.Shrunk.Confirmed {
			n++
		}
	}
	return n
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
// CPU, up to maxParallel. A case mostly waits on its faults and its
// clients' holds, but its clients are processes of their own, and a lab
// that stalls makes its verdicts undecided.
func DefaultParallel() int { return min(maxParallel, max(2, 2*runtime.NumCPU())) }

// The most runs that may decide a shrink candidate, and cases side by
// side (Validate).
const (
	maxRuns     = 15
	maxParallel = 64
)

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
	e, templates, err := newExplorer(cfg)
	if err != nil {
		return nil, err
	}
	r := cfg.Runner
	if r == nil {
		r = &runner.Runner{}
	}
	r.Progress = e.caseProgress
	r.Parallel, r.MaxCases = e.cfg.Parallel > 1, e.cfg.Parallel
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
	return e.res, e.close(ctx, runErr)
}

// newExplorer checks cfg and profiles its approaches: each approach's
// search, and a case of each for the session's plan.
func newExplorer(cfg Config) (*explorer, []runner.Case, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, usage(err)
	}
	e := &explorer{cfg: cfg, cs: cases{reg: cfg.Registry, external: cfg.External, docker: cfg.Docker},
		start: time.Now(), res: &Result{Seed: cfg.Seed, Budget: cfg.Budget}, tried: map[string]int{}}
	e.deadline = e.start.Add(cfg.Budget - closing)
	var templates []runner.Case
	for i, name := range cfg.Approaches {
		a, err := cfg.Registry.Get(name)
		if err != nil {
			return nil, nil, usage(err)
		}
		p, err := e.cs.profile(a, cfg.Faults)
		if err != nil {
			return nil, nil, usage(fmt.Errorf("%s: %w", name, err))
		}
		cov := NewCoverage()
		e.res.Approaches = append(e.res.Approaches, &Search{Approach: name, Profile: p, Coverage: cov, overhead: firstOverhead,
			approach: a, searcher: NewSearcher(p, cfg.Seed+uint64(i), cfg.Steer, cov)})
		c, err := e.cs.caseOf(Generate(p, cfg.Seed, 0), name)
		if err != nil {
			return nil, nil, usage(err)
		}
		templates = append(templates, c)
	}
	e.res.Parallel = e.cfg.Parallel
	return e, templates, nil
}

// close writes every finding's file (new ones first), closes the session
// and writes the results; the error is the first of the loop's (runErr)
// and these.
func (e *explorer) close(ctx context.Context, runErr error) error {
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
	out, err := e.sess.Close(ctx, runErr)
	e.res.Outcome = out
	if out == nil {
		// Nothing ran (the servers never came up): no folder is left.
		e.res.Dir = ""
	} else if werr := writeResults(e.res, e.cfg); werr != nil && err == nil {
		err = werr
	}
	if err == nil && runErr != nil {
		err = runErr
	}
	return err
}

// loop runs cases until the budget is spent (or StopAfterNew new findings
// are confirmed): a new finding is shrunk as soon as it is found; in the
// last part of the budget, the known ones.
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
			if n := e.cfg.StopAfterNew; n > 0 && e.res.confirmedNew() >= n {
				e.res.StoppedEarly = true
				return nil
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

// ended is what a loop's error means: the budget's end is no error.
func (e *explorer) ended(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(e.deadline) {
		return nil
	}
	return err
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

// usageError is bad usage (runner.ErrUsage), its message unchanged.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }

func (u usageError) Unwrap() []error { return []error{runner.ErrUsage, u.err} }

func usage(err error) error { return usageError{err} }

package runner

import (
	"context"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// Session is a plan held open for a caller that picks each case from what
// the last one showed (locklab explore): the servers start when the first
// case needs them (and again when a case asks for other server options),
// every case goes through runCase's numbered steps into one history and
// one results folder, and Close writes the plan's artifacts as Run does.
// RunCases runs a batch of cases side by side when the runner is Parallel
// (as a parallel run does: each case on a lane its faults allow, those
// whose faults reach no server sharing theirs, at most MaxCases at once),
// one after the other when it is not.
type Session struct {
	s         *session
	stopWatch func() // the stall probe of locklab itself
	procBase  int    // process ids used by the cases run one after the other
}

// Open starts a session for p. p.Cases are not run: they name the
// approaches, and so the server kinds, the session's cases may use.
func (r *Runner) Open(ctx context.Context, p Plan) (*Session, error) {
	s, err := r.begin(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := s.save(); err != nil {
		return nil, infraErr(err)
	}
	if err := s.openHistory(); err != nil {
		_, err = s.finish(ctx, err)
		return nil, err
	}
	if r.Parallel && p.External == nil {
		// The cases to come are not known yet: as many as may run at
		// once may want a spare lane, and the approaches that use
		// several nodes a second lane.
		for kind, l := range s.layouts {
			if spareLanes(p.Cases, kind, 1) > 0 {
				l.spare = spareNodeLanes(cap(s.slots))
			}
			if secondLaneCases(p.Cases, kind) > 0 {
				l.second = 1
			}
			s.layouts[kind] = l
		}
	}
	s.p.ShareServers = s.p.ShareServers || r.Parallel
	s.base.keepEvents = true
	return &Session{s: s, stopWatch: s.watchStalls(ctx)}, nil
}

// Running is the options of the servers running now; false when none
// have started yet (or the plan needs none).
func (x *Session) Running() (ServerOptions, bool) {
	return x.s.serversFor, x.s.servers != nil
}

// Dir is the session's results folder.
func (x *Session) Dir() string { return x.s.dir }

// CaseResult is what one case of a session showed.
type CaseResult struct {
	Run     report.Run
	Verdict verdict.Result
	// Check is the checker's verdict, each double grant with its holders'
	// intervals.
	Check checker.Verdict
	// Events are the case's events in the order they were recorded, its
	// faults' nemesis events among them.
	Events []history.Event
}

// RunCase runs c and keeps it in the session's results. The end of ctx
// cuts the case short, as a Ctrl-C does a run's; what it showed is still
// checked and returned.
func (x *Session) RunCase(ctx context.Context, c Case) (CaseResult, error) {
	out, err := x.RunCases(ctx, []Case{c})
	if err != nil {
		return CaseResult{}, err
	}
	return out[0], nil
}

// RunCases runs cases (side by side when the runner is Parallel) and keeps
// them in the session's results; it returns their results in the order
// given. Cases asking for other server options than those running wait
// for their servers to be started anew, after the others. The first case
// to fail stops the others and is the error. A case that never started
// (ctx ended first) has a zero CaseResult (Run.Case empty).
func (x *Session) RunCases(ctx context.Context, cases []Case) ([]CaseResult, error) {
	s := x.s
	for _, c := range cases {
		if err := c.Validate(); err != nil {
			return nil, usageErr(err)
		}
	}
	out := make([]CaseResult, len(cases))
	keep := func(i int, c Case, co caseOutcome) error {
		if err := s.record(c, co); err != nil {
			return err
		}
		out[i] = CaseResult{Run: co.run, Verdict: co.verdict, Check: co.check, Events: co.events}
		return nil
	}
	for _, idx := range indicesByServers(cases) {
		if err := s.ensureServers(ctx, cases[idx[0]]); err != nil {
			return nil, err
		}
		group := pick(cases, idx)
		var err error
		if s.r.Parallel {
			err = s.runGroup(ctx, group, func(i int, co caseOutcome) error { return keep(idx[i], group[i], co) })
		} else {
			err = x.inOrder(ctx, group, func(i int, co caseOutcome) error { return keep(idx[i], group[i], co) })
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// inOrder runs a group's cases one after the other on the servers running
// now, on all of them.
func (x *Session) inOrder(ctx context.Context, group []Case, done func(i int, co caseOutcome) error) error {
	s := x.s
	for i, c := range group {
		env := s.base
		env.useServers(s.servers)
		s.mu.Lock()
		s.step++
		env.step, env.steps = s.step, s.step
		s.mu.Unlock()
		env.procBase = x.procBase
		co, err := runCase(ctx, &env, c)
		x.procBase = env.procBase
		if err != nil {
			return err
		}
		if err := done(i, co); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the session: the history is closed, the plan's artifacts and
// results.json written, the servers stopped. runErr is how the caller's
// cases ended (nil: as it meant them to); a ctx that has ended marks the
// results interrupted.
func (x *Session) Close(ctx context.Context, runErr error) (*Outcome, error) {
	defer x.s.closeFaultLog() // after the servers: their last heals write to it
	defer x.s.closeServers()
	x.stopWatch()
	return x.s.end(ctx, runErr)
}

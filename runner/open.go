package runner

import (
	"context"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// Session is a plan held open: Run is Open, RunCases of the plan's cases
// and Close; a caller that picks each batch of cases from what the last
// one showed (locklab explore) makes those calls itself. The servers start
// when the first case needs them (and again when a case asks for other
// server options), every case goes through runCase's numbered steps into
// one history and one results folder, and Close writes the plan's
// artifacts. RunCases runs a batch side by side when the runner is
// Parallel (each case on a lane its faults allow, those whose faults reach
// no server sharing theirs, at most MaxCases at once), one after the other
// when it is not.
type Session struct {
	s         *session
	stopWatch func() // the stall probe of locklab itself
}

// Open starts a session for p. p.Cases are not run: they name the
// approaches, and so the server kinds, the session's cases may use.
func (r *Runner) Open(ctx context.Context, p Plan) (*Session, error) {
	x, _, err := r.open(ctx, p)
	if err != nil {
		return nil, err
	}
	x.s.forCasesToCome()
	return x, nil
}

// forCasesToCome readies the session for cases its caller picks as it
// goes: a parallel one's cases share their servers where their faults
// allow, each case's outcome carries its events, and how many there are
// is not known.
func (s *session) forCasesToCome() {
	if s.r.Parallel && s.p.External == nil {
		// As many as may run at once may want a spare lane, and the
		// approaches that use several nodes a second lane.
		for kind, l := range s.layouts {
			if spareLanes(s.p.Cases, kind, 1) > 0 {
				l.spare = spareNodeLanes(s.atOnce)
			}
			if secondLaneCases(s.p.Cases, kind) > 0 {
				k, _ := cluster.KindOf(kind)
				l.second = secondLanes(k, s.atOnce)
			}
			s.layouts[kind] = l
		}
	}
	s.p.ShareServers = s.p.ShareServers || s.r.Parallel
	s.base.keepEvents = true
	s.base.steps = 0
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
	for _, c := range cases {
		if err := c.Validate(); err != nil {
			return nil, usageErr(err)
		}
	}
	out := make([]CaseResult, len(cases))
	err := x.s.runCases(ctx, cases, func(i int, co caseOutcome) {
		out[i] = CaseResult{Run: co.run, Verdict: co.verdict, Check: co.check, Events: co.events}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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

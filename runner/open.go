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
// Cases run one at a time.
type Session struct {
	s   *session
	env caseEnv
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
	x := &Session{s: s, env: s.base}
	x.env.keepEvents = true
	return x, nil
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
	if err := c.Validate(); err != nil {
		return CaseResult{}, usageErr(err)
	}
	if err := x.s.ensureServers(ctx, c); err != nil {
		return CaseResult{}, err
	}
	x.env.useServers(x.s.servers)
	x.s.mu.Lock()
	x.s.step++
	x.env.step, x.env.steps = x.s.step, x.s.step
	x.s.mu.Unlock()
	co, err := runCase(ctx, &x.env, c)
	if err != nil {
		return CaseResult{}, err
	}
	if err := x.s.record(c, co); err != nil {
		return CaseResult{}, err
	}
	return CaseResult{Run: co.run, Verdict: co.verdict, Check: co.check, Events: co.events}, nil
}

// Close ends the session: the history is closed, the plan's artifacts and
// results.json written, the servers stopped. runErr is how the caller's
// cases ended (nil: as it meant them to); a ctx that has ended marks the
// results interrupted.
func (x *Session) Close(ctx context.Context, runErr error) (*Outcome, error) {
	defer x.s.closeServers()
	return x.s.end(ctx, runErr)
}

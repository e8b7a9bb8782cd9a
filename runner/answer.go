package runner

import (
	"context"
	"slices"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/verdict"
)

// A case ends when its question is answered (Plan.EndWhenAnswered), not
// when its file's duration has passed, which stays the longest it runs:
//   - expected to show a violation: once the checker shows every outcome
//     expected (the verdict on the events so far agrees) and no fault with
//     a `for` is in force, the faults are healed, the history gets a tail
//     of answerTail for the aftermath, and the clients finish;
//   - expected safe, under faults: once every fault step has run its course
//     once (healed, in place until the end, or instantaneous), a lease (the
//     workload's TTL) has passed since the first fault took effect (what
//     was held then has run out on the server, so a wrong grant could be
//     made), and after the round as many grants as there are clients were
//     checked (each could have been the one wrongly granted, or the holder
//     that outlived its lease); then the same heal, tail and finish;
//   - expected safe without faults: once minGrantsNoFault grants were
//     checked;
//   - expected to be blocked or unavailable, or forbidden to be: never
//     early, since the case's last stretch decides those.
//
// The final verdict is still the checker's on the whole history: the early
// look only decides when to stop.
const (
	answerTail       = time.Second
	answerEvery      = 200 * time.Millisecond
	minGrantsNoFault = 300
)

// answerRule is when one case may end early.
type answerRule struct {
	expect  verdict.Expectation
	unsafe  bool          // expects a violation
	steps   int           // distinct fault steps the case plans
	lease   time.Duration // the workload's TTL
	clients int
}

// newAnswerRule is c's rule; ok false: c runs its whole duration.
func newAnswerRule(c Case, plan []chaos.Planned) (answerRule, bool) {
	e := c.Expect
	if !c.Record || len(e.Outcomes) == 0 {
		return answerRule{}, false
	}
	for _, o := range slices.Concat(e.Outcomes, e.Forbidden) {
		if o.Liveness() {
			return answerRule{}, false
		}
	}
	steps := map[int]bool{}
	for _, p := range plan {
		steps[p.Step] = true
	}
	return answerRule{expect: e, unsafe: verdict.ExpectsViolation(e.Outcomes), steps: len(steps),
		lease: c.Workload.TTL, clients: c.Workload.Clients}, true
}

// engineState is what the rule reads of a case's chaos engine.
type engineState interface {
	Settled() int
	InForce() bool
}

// caseSoFar is what the rule reads of a running case.
type caseSoFar struct {
	now        time.Time
	firstFault time.Time // when the first fault took effect; zero: none yet
	settledAt  time.Time // when every step had run its course; zero: not yet
	grants     int64     // grants so far
	settledAs  int64     // grants when every step had run its course
}

// answered says whether the case may end now.
func (a answerRule) answered(snapshot func() checker.Verdict, eng engineState, s caseSoFar) bool {
	if a.unsafe {
		if eng != nil && eng.InForce() {
			return false
		}
		obs := verdict.Observe(snapshot(), true, verdict.Liveness{})
		return verdict.Compare(a.expect, obs).Status == verdict.Agrees
	}
	if eng == nil || a.steps == 0 {
		return s.grants >= minGrantsNoFault
	}
	return !s.settledAt.IsZero() && !s.firstFault.IsZero() && s.now.Sub(s.firstFault) >= a.lease &&
		s.grants-s.settledAs >= int64(a.clients)
}

// watchAnswer checks a's rule every answerEvery until the case answered
// (then it stops the faults, waits for their heal and the tail, and
// finishes the clients) or done closes (the case ended anyway).
func (r *caseRun) watchAnswer(ctx context.Context, a answerRule, eng *chaos.Engine, stopFaults func(), healed <-chan struct{}, done <-chan struct{}) {
	t := time.NewTicker(answerEvery)
	defer t.Stop()
	var state engineState
	if eng != nil {
		state = eng
	}
	var s caseSoFar
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case s.now = <-t.C:
			s.grants = r.rec.grantCount()
			if s.firstFault.IsZero() && r.nem.started() {
				s.firstFault = s.now
			}
			if eng != nil && s.settledAt.IsZero() && eng.Settled() >= a.steps {
				s.settledAt, s.settledAs = s.now, s.grants
			}
			if !a.answered(r.rec.snapshot, state, s) {
				continue
			}
		}
		stopFaults()
		select {
		case <-healed:
		case <-done:
			return
		}
		select {
		case <-time.After(answerTail):
		case <-done:
			return
		}
		r.answeredEarly.Store(true)
		r.clients.Finish()
		return
	}
}

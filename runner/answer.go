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
//   - expected safe: once every fault step has run its course once (healed,
//     in place until the end, or instantaneous), the case has watched for
//     one lease and one hold more (a lease the fault disturbed runs out, a
//     holder working past it writes), and at least minGrantsUnderFault
//     grants were checked since the first fault (minGrantsNoFault when the
//     case has none); then the same heal, tail and finish;
//   - expected to be blocked or unavailable, or forbidden to be: never
//     early, since the case's last stretch decides those.
//
// The final verdict is still the checker's on the whole history: the early
// look only decides when to stop.
const (
	answerTail          = time.Second
	answerEvery         = 200 * time.Millisecond
	minGrantsUnderFault = 100
	minGrantsNoFault    = 1000
)

// answerRule is when one case may end early.
type answerRule struct {
	expect  verdict.Expectation
	unsafe  bool          // expects a violation
	steps   int           // distinct fault steps the case plans
	observe time.Duration // watched after every step ran its course (expected safe)
}

// newAnswerRule is c's rule; ok false: c runs its whole duration.
func newAnswerRule(c Case, plan []chaos.Planned) (answerRule, bool) {
	e := c.Expect
	if !c.Record || len(e.Outcomes) == 0 {
		return answerRule{}, false
	}
	for _, o := range slices.Concat(e.Outcomes, e.Forbidden) {
		if o == verdict.Blocked || o == verdict.Unavailable {
			return answerRule{}, false
		}
	}
	steps := map[int]bool{}
	for _, p := range plan {
		steps[p.Step] = true
	}
	return answerRule{expect: e, unsafe: verdict.ExpectsViolation(e.Outcomes), steps: len(steps),
		observe: c.Workload.TTL + max(c.Workload.Hold.A, c.Workload.Hold.B)}, true
}

// engineState is what the rule reads of a case's chaos engine.
type engineState interface {
	Settled() int
	InForce() bool
}

// answered says whether the case may end now. settledAt is when every
// step had first run its course (zero: not yet); grants counts grants
// since the first fault (since the start without one).
func (a answerRule) answered(snapshot func() checker.Verdict, eng engineState, now, settledAt time.Time, grants int64) bool {
	if eng != nil && eng.InForce() && a.unsafe {
		return false
	}
	if a.unsafe {
		obs := verdict.Observe(snapshot(), true, verdict.Liveness{})
		return verdict.Compare(a.expect, obs).Status == verdict.Agrees
	}
	if eng == nil || a.steps == 0 {
		return grants >= minGrantsNoFault
	}
	return !settledAt.IsZero() && now.Sub(settledAt) >= a.observe && grants >= minGrantsUnderFault
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
	var settledAt time.Time
	grantsFrom := int64(-1)
	if eng == nil {
		grantsFrom = 0
	}
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case now := <-t.C:
			if grantsFrom < 0 && r.nem.started() {
				grantsFrom = r.rec.grantCount()
			}
			if eng != nil && settledAt.IsZero() && eng.Settled() >= a.steps {
				settledAt = now
			}
			grants := int64(0)
			if grantsFrom >= 0 {
				grants = r.rec.grantCount() - grantsFrom
			}
			if !a.answered(r.rec.snapshot, state, now, settledAt, grants) {
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

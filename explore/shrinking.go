package explore

import (
	"context"
	"fmt"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
	"slices"
	"time"
)

// A finding is shrunk on the exploration's session: the Shrinker's runs
// are cases like the exploring ones, within the shrink's share of the
// budget.

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
	sh := e.shrinker(srch, f.Class, f.Stated, f.Mechanism, f.inLease, prefix, "shrinking")
	sh.AffordMore = func(s Schedule) bool { return e.afford(srch, s) }
	out, err := sh.Shrink(ctx, f.Original, f.hits, f.tries)
	if err == nil {
		// How often the final schedule shows it: more runs of it, while
		// the shrink's share of the budget lasts.
		err = sh.More(ctx, &out, reproRuns)
	}
	if err == nil {
		err = sh.Faultless(ctx, &out, reproRuns)
	}
	f.Shrunk = &out
	if out.Confirmed && (len(out.Steps) > 0 || f.Retries > 0) {
		// Judged again on what is left (a known class may turn out new
		// once the faults that a rule spoke for are gone), or on the
		// schedule taken up after the first was refuted.
		j, _ := e.judge(srch, out.Schedule.Kinds(), out.Schedule.Workload, f.Class, f.Mechanism, f.inLease)
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
// scenario file; "": not known yet) shown by mechanism (""; any way), its
// cases named prefix and a number,
// side by side as the exploration runs cases, for at most shrinkShare of
// the budget from now. Each run ends once it showed the class (it is run
// to learn that, and nothing after it).
func (e *explorer) shrinker(srch *Search, c, stated verdict.Outcome, mechanism string, inLease bool, prefix, doing string) *Shrinker {
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
			res, err := e.runCases(ctx, ss, names, func(rc *runner.Case) {
				if stated != "" {
					rc.Expect = verdict.Expectation{Outcomes: []verdict.Outcome{stated}}
					rc.EndWhenAnswered = true
				}
			}, []*Search{srch})
			if err != nil {
				return nil, err
			}
			var ts []Trial
			for i, r := range res {
				if r.Run.Case == "" {
					break // never started: the budget or a Ctrl-C ended the batch
				}
				ts = append(ts, trial(r, names[i], c, mechanism, inLease, verdict.FreeingOf(srch.approach, ss[i].Workload.TTL)))
			}
			e.res.ShrinkRuns += len(ts)
			return ts, nil
		}}
}

// trial is what case name's result says of class c (shown by mechanism,
// unless that is ""; with inLease, inside the first holder's lease as
// granted).
func trial(res runner.CaseResult, name string, c verdict.Outcome, mechanism string, inLease bool, f verdict.Freeing) Trial {
	if res.Verdict.LabStalled {
		// The lab stood still during what decides it: not a
		// reproduction (nor anything else).
		return Trial{Case: name}
	}
	for _, x := range sightingsOf(res, f) {
		if x.Class == c && (mechanism == "" || x.Mechanism == mechanism) && (!inLease || x.InLease) {
			return Trial{Shown: true, Case: name, Proof: x.Proof, Stated: x.Stated}
		}
	}
	return Trial{Case: name}
}

package explore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// Oracle runs a schedule once and reports whether the run showed the
// class of violation being shrunk.
type Oracle func(ctx context.Context, s Schedule) (Trial, error)

// Trials runs schedules side by side, once each, and reports what each
// run showed, in order. It returns the trials of the runs that ended
// (all of them, unless it failed).
type Trials func(ctx context.Context, ss []Schedule) ([]Trial, error)

// Trial is one run of a schedule: whether it showed the violation, and
// where (its case, and the violation in words).
type Trial struct {
	Shown       bool
	Case, Proof string
	Stated      verdict.Outcome // as a scenario file states it (Sighting.Stated)
}

// Shrinker delta-debugs a schedule towards the smallest one that still
// shows a violation: fewer faults, a shorter run, fewer clients and keys,
// shorter faults placed earlier, a plainer workload. A candidate is kept
// only if most of its runs show the violation (a flaky reproduction is not
// a reproduction); it is given no more runs once it is decided. Run k of a
// schedule (0 the first) has its seed plus k, as `locklab run --runs N` of
// its file has: the shrink decides on the runs a user repeats.
type Shrinker struct {
	// Oracle runs one schedule; Batch, when set, runs several side by
	// side and is used instead: a candidate's runs, and those of the next
	// few candidates (Parallel runs at most at once), go together.
	Oracle   Oracle
	Batch    Trials
	Parallel int
	// Runs is how many runs decide a candidate (default 3); most of them
	// must show the violation.
	Runs int
	// MaxRuns bounds the oracle's runs over the whole shrink (0: none).
	MaxRuns int
	// Afford reports whether there is time for one more run of s (or a
	// batch of runs of schedules like s side by side); nil: always. The
	// shrink stops, keeping what it has, when there is not.
	Afford func(s Schedule) bool
	// AffordMore is Afford for More's runs; nil: Afford. The measuring of
	// the final schedule may run on past the shrink's own time: a file
	// that shows the violation is what the shrink is for.
	AffordMore func(s Schedule) bool
	// Scale is the schedule's time scale (Profile.Scale): a run is not
	// cut shorter than the last fault's end plus one of it.
	Scale func(workload.Spec) time.Duration
}

// Shrunk is what a shrink produced.
type Shrunk struct {
	Schedule Schedule // the smallest schedule kept (the original if none was)
	// Confirmed: the original showed the violation in most of its runs;
	// Refuted: it did not, and nothing was shrunk. Neither: the shrink
	// stopped before it knew.
	Confirmed, Refuted bool
	Runs               int      // the oracle's runs, all told
	Steps              []string // what each kept candidate changed, in order
	// Hits and Tries are the runs of the final schedule that showed the
	// violation, of those it had; Last is its last run that showed it
	// (none when the original was not run again).
	Hits, Tries int
	Last        Trial
	Stopped     string // why it stopped early ("" when no candidate was left)
	RunsPer     int    // the runs that decide a candidate
	// Undone are the steps taken back because the schedule they made
	// showed the violation in no more than half of its measuring runs
	// (More), each with those runs' count.
	Undone []string
	// WithoutFaults is the final schedule run with no fault at all, as
	// many times as it was measured (Faultless): a violation that shows
	// there too is the lock's own race under this machine's timing, and
	// the faults are not what a file of them replays.
	WithoutFaults Control
	kept          []keptSchedule // the original and each kept candidate, in order
}

// Control is how often a schedule's control showed the violation.
type Control struct {
	Hits, Tries int
}

// Faultless runs out's final schedule with no fault at all, n times side
// by side (while the measuring's budget lasts), into out.WithoutFaults.
// Beside two busy loops the planted release bug showed with no fault (its
// compare-and-delete answered 152 ms late, past its own 100 ms deadline),
// and the shrink's file, one dropped reply kept on those runs, replayed 0
// of 15 times once the load had eased.
func (sh *Shrinker) Faultless(ctx context.Context, out *Shrunk, n int) error {
	if !out.Confirmed || len(out.Schedule.Faults) == 0 {
		return nil
	}
	s := out.Schedule.Clone()
	s.Faults = nil
	ss := make([]Schedule, n)
	for k := range ss {
		ss[k] = nth(s, k)
	}
	afford := sh.AffordMore
	if afford == nil {
		afford = sh.Afford
	}
	ts, err := sh.trials(ctx, ss, &out.Runs, afford)
	for _, t := range ts {
		out.WithoutFaults.Tries++
		if t.Shown {
			out.WithoutFaults.Hits++
		}
	}
	var stop errStop
	if errors.As(err, &stop) {
		return nil
	}
	return err
}

// keptSchedule is a schedule the shrink kept, with its runs.
type keptSchedule struct {
	s           Schedule
	hits, tries int
	last        Trial
}

// Shrink shrinks s, which showed the violation in hits of tries runs
// already (the run that found it: 1 of 1).
func (sh *Shrinker) Shrink(ctx context.Context, s Schedule, hits, tries int) (Shrunk, error) {
	out := Shrunk{Schedule: s, RunsPer: sh.runs()}
	start := sh.fresh(false)
	start.hits, start.tries = hits, tries
	ds, err := sh.decide(ctx, []Schedule{s}, []decision{start}, &out.Runs)
	d := ds[0]
	out.Hits, out.Tries, out.Last = d.hits, d.tries, d.last
	if err != nil {
		return out, stopped(&out, err)
	}
	if !d.ok {
		out.Refuted = true
		return out, nil
	}
	out.Confirmed = true
	out.kept = []keptSchedule{{s: s, hits: d.hits, tries: d.tries, last: d.last}}
	// Passes over the candidates, in order; a kept one replaces the
	// schedule and the pass goes on from the same place in the new
	// schedule's list, so the same cut is tried again at once (a fault
	// halved until it no longer shows the violation). A change refused in
	// a pass is tried again (on the schedule as it is then) only in the
	// next, which runs only if the pass kept one. With runs side by side, the next few candidates are
	// decided together; the first of them kept is as if decided alone
	// (those before it were refused), and what came after it is dropped.
	// A schedule refused once is not tried again: two paths of cuts can
	// reach the same schedule, and a second try of a cut that must show in
	// every run lets a fluke through (a halved clock jump refused with 0
	// of 1, then kept with 3 of 3 when a later pass reached it again).
	refused := map[string]bool{}
	for pass := 0; pass < maxPasses; pass++ {
		progress := false
		for i := 0; ; {
			cs := sh.candidates(out.Schedule)
			// The next few candidates from i, but none that would run a
			// schedule refused before, or the current one.
			var at []int
			var ss []Schedule
			var ds []decision
			skip := map[string]bool{key(out.Schedule): true}
			j := i
			for ; j < len(cs) && len(at) < sh.window(); j++ {
				if k := key(cs[j].s); !skip[k] && !refused[k] {
					skip[k] = true
					at, ss, ds = append(at, j), append(ss, cs[j].s), append(ds, sh.fresh(cs[j].cut))
				}
			}
			if len(at) == 0 {
				break
			}
			ds, err := sh.decide(ctx, ss, ds, &out.Runs)
			kept := -1
			for k, d := range ds {
				if d.ok {
					kept = k
					break
				}
				if !d.decided() {
					break // an earlier candidate was cut short: it comes first
				}
				refused[key(ss[k])] = true
			}
			if kept >= 0 {
				c := cs[at[kept]]
				out.Schedule, out.Hits, out.Tries, out.Last = c.s, ds[kept].hits, ds[kept].tries, ds[kept].last
				out.Steps = append(out.Steps, c.what)
				out.kept = append(out.kept, keptSchedule{s: c.s, hits: ds[kept].hits, tries: ds[kept].tries, last: ds[kept].last})
				progress = true
				i = at[kept] // the same place in the new list
			} else {
				i = j
			}
			if err != nil {
				return out, stopped(&out, err)
			}
		}
		if !progress {
			break
		}
	}
	return out, nil
}

// More gives the final schedule of out more runs, side by side, until it
// had n (or the budget ends): how often it shows the violation. A
// schedule that showed it in no more than half of n runs gives way to the
// one kept before it, measured in its turn: a cut kept on two lucky runs
// of three is not what a user's file should be. The original stays,
// however it measures.
func (sh *Shrinker) More(ctx context.Context, out *Shrunk, n int) error {
	for out.Confirmed && out.Tries < n {
		ss := make([]Schedule, 0, n-out.Tries)
		for k := out.Tries; k < n; k++ {
			ss = append(ss, nth(out.Schedule, k))
		}
		afford := sh.AffordMore
		if afford == nil {
			afford = sh.Afford
		}
		ts, err := sh.trials(ctx, ss, &out.Runs, afford)
		for _, t := range ts {
			out.Tries++
			if t.Shown {
				out.Hits++
				out.Last = t
			}
		}
		var stop errStop
		stopped := errors.As(err, &stop)
		if err != nil && !stopped {
			return err
		}
		// Judged on the runs it had even when the budget ended them: a
		// step measured at half or less is taken back either way.
		if 2*out.Hits > out.Tries || len(out.kept) < 2 || len(out.Steps) == 0 {
			return nil
		}
		last := len(out.Steps) - 1
		out.Undone = append(out.Undone, fmt.Sprintf("%s (shown in %d of %d)", out.Steps[last], out.Hits, out.Tries))
		out.Steps, out.kept = out.Steps[:last], out.kept[:len(out.kept)-1]
		k := out.kept[len(out.kept)-1]
		out.Schedule, out.Hits, out.Tries, out.Last = k.s, k.hits, k.tries, k.last
		if stopped {
			return nil
		}
	}
	return nil
}

// Reproduce runs s until most of Runs runs show the violation
// (Confirmed) or can no longer (Refuted); it shrinks nothing.
func (sh *Shrinker) Reproduce(ctx context.Context, s Schedule) (Shrunk, error) {
	out := Shrunk{Schedule: s, RunsPer: sh.runs()}
	ds, err := sh.decide(ctx, []Schedule{s}, []decision{sh.fresh(false)}, &out.Runs)
	d := ds[0]
	out.Hits, out.Tries, out.Last = d.hits, d.tries, d.last
	if err != nil {
		return out, stopped(&out, err)
	}
	out.Confirmed, out.Refuted = d.ok, !d.ok
	return out, nil
}

func (sh *Shrinker) runs() int {
	if sh.Runs <= 0 {
		return 3
	}
	return sh.Runs
}

// window is how many candidates are decided together: as many as the
// runs side by side give each the runs that may decide it.
func (sh *Shrinker) window() int {
	if sh.Batch == nil {
		return 1
	}
	return max(1, sh.Parallel/(sh.runs()/2+1))
}

// decision is how a schedule's runs came out.
type decision struct {
	ok          bool
	hits, tries int
	last        Trial // its last run that showed the violation
	need, allow int   // hits that decide it, misses it may have
}

// fresh is the decision of a schedule not run yet: most of its runs must
// show the violation, or every one for a cut.
func (sh *Shrinker) fresh(cut bool) decision {
	need := sh.runs()/2 + 1
	if cut {
		need = sh.runs()
	}
	return decision{need: need, allow: sh.runs() - need}
}

// decided reports whether the runs so far decide the schedule.
func (d decision) decided() bool { return d.hits >= d.need || d.tries-d.hits > d.allow }

// decide runs the schedules ss until each is decided: as many of the runs
// as its decision needs show the violation (ok) or can no longer, counting
// on the hits and tries each starts with (ds, from fresh). In rounds, each
// schedule not yet decided gets the runs that may decide it: one after the
// other (no Batch, or Parallel 1), no more than that (the hits it lacks,
// or the misses that would end it, whichever is fewer); side by side, the
// hits it lacks, all of a
// round's runs at once (a run wasted now and then against a round saved).
// A round stops at the first schedule found ok (those after it would be
// dropped). *runs counts the oracle's runs against MaxRuns. On an error,
// the decisions so far come back with it.
func (sh *Shrinker) decide(ctx context.Context, ss []Schedule, ds []decision, runs *int) ([]decision, error) {
	for {
		var batch []Schedule
		var owner []int
		for i, d := range ds {
			if d.hits >= d.need {
				break
			}
			if d.decided() {
				continue
			}
			n := d.need - d.hits
			if sh.Batch == nil || sh.Parallel == 1 {
				n = min(n, d.allow-(d.tries-d.hits)+1)
			}
			for k := range n {
				batch = append(batch, nth(ss[i], d.tries+k))
				owner = append(owner, i)
			}
		}
		if len(batch) == 0 {
			break
		}
		ts, err := sh.trials(ctx, batch, runs, sh.Afford)
		for k, t := range ts {
			d := &ds[owner[k]]
			d.tries++
			if t.Shown {
				d.hits++
				d.last = t
			}
		}
		if err != nil {
			return ds, err
		}
	}
	for i := range ds {
		ds[i].ok = ds[i].hits >= ds[i].need
	}
	return ds, nil
}

// trials runs ss (side by side with Batch, else one after the other),
// within MaxRuns and what afford allows: the runs past a limit are not
// run, and the limit is the error.
func (sh *Shrinker) trials(ctx context.Context, ss []Schedule, runs *int, afford func(Schedule) bool) ([]Trial, error) {
	var out []Trial
	for len(ss) > 0 {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		n := len(ss)
		if sh.Batch == nil {
			n = 1
		} else if sh.Parallel > 0 {
			n = min(n, sh.Parallel)
		}
		if sh.MaxRuns > 0 {
			if *runs >= sh.MaxRuns {
				return out, errStop("the shrink's run limit")
			}
			n = min(n, sh.MaxRuns-*runs)
		}
		if afford != nil && !afford(longest(ss[:n])) {
			return out, errStop("the budget")
		}
		var ts []Trial
		var err error
		if sh.Batch != nil {
			ts, err = sh.Batch(ctx, ss[:n])
		} else {
			var t Trial
			if t, err = sh.Oracle(ctx, ss[0]); err == nil {
				ts = []Trial{t}
			}
		}
		*runs += len(ts)
		out = append(out, ts...)
		if err != nil {
			return out, err
		}
		ss = ss[n:]
	}
	return out, nil
}

// key is what tells schedules apart: the scenario file each is.
func key(s Schedule) string { return string(s.Scenario("")) }

// nth is run k of s: its seed plus k.
func nth(s Schedule, k int) Schedule {
	s.Seed += uint64(k)
	return s
}

// maxPasses bounds the passes over the candidates: a first pass does most
// of the work, and a second picks up what the first made possible (a run
// that can be shorter once a fault is gone).
const maxPasses = 2

// errStop ends a shrink early without failing it.
type errStop string

func (e errStop) Error() string { return "out of " + string(e) }

// stopped notes why a shrink stopped: a limit keeps what it has (no
// error); anything else (the end of ctx) is the caller's.
func stopped(out *Shrunk, err error) error {
	var stop errStop
	if errors.As(err, &stop) {
		out.Stopped = stop.Error()
		return nil
	}
	out.Stopped = err.Error()
	return err
}

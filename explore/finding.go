package explore

import (
	"github.com/locklab/locklab/verdict"
	"time"
)

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
	// Mechanism: a finding new by how its double grant came about
	// (Sighting.Mechanism), which no entry of the matrix's mechanisms gives
	// its approach though a rule predicts its class; its runs must show
	// that mechanism. "": the class alone.
	Mechanism string
	// inLease: new as a double grant inside the first holder's lease as
	// granted (Sighting.InLease), which the run's client clock faults do
	// not explain; its runs must show that.
	inLease bool
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

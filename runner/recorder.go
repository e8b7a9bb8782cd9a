package runner

import (
	"sync"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/metrics"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// checkingRecorder writes each event to the run's history and feeds the
// case's checker, so the verdict is ready when the case ends.
type checkingRecorder struct {
	w     history.Recorder
	mu    sync.Mutex
	check *checker.Checker // nil: record nothing, check nothing
	first int64
	last  int64
	// lastGrant is when the last acquire succeeded, lastRefused when the
	// last one ended without a grant, refused or unanswered (for
	// "blocked"); grants counts the grants.
	lastGrant   int64
	lastRefused int64
	grants      int64
	// observe sees every event after it is recorded (the holders view).
	observe func(history.Event)
	// latencies keeps each acquire's latency for the latency-over-time
	// plot, up to maxLatencyPoints (beyond that a long bench keeps
	// memory flat and the plot shows the first stretch).
	latencies []report.LatencyPoint
	invoked   map[int]int64 // proc -> its pending acquire's invoke time
	// locks measures hand-off and fairness.
	locks *metrics.Locks
	// keep: events keeps every event (a session's caller reads them).
	keep   bool
	events []history.Event
	// stalls are the stall events recorded through it: its workers'.
	stalls []verdict.Stall
	// times places the checked events in time, for the verdict.
	times eventTimes
	// starve follows whether a key stayed stuck ("blocked").
	starve verdict.Starvation
}

const maxLatencyPoints = 200_000

// eventAt is when the checked event of index i was recorded, and by whom.
func (r *checkingRecorder) eventAt(i int64) (t int64, proc int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.times.at(i)
}

func (r *checkingRecorder) Record(ev history.Event) history.Event {
	ev = r.w.Record(ev)
	r.mu.Lock()
	if r.check != nil {
		r.check.Add(ev)
		r.times.add(ev)
	}
	if who, start, end, ok := history.ReadStall(ev); ok {
		r.stalls = append(r.stalls, labStall(who, start, end))
	}
	if r.locks != nil {
		r.locks.Observe(ev)
	}
	if r.first == 0 || ev.T < r.first {
		r.first = ev.T
	}
	r.last = max(r.last, ev.T)
	r.starve.Add(ev)
	if r.keep {
		r.events = append(r.events, ev)
	}
	if ev.F == history.Acquire && ev.Type == history.OK {
		r.lastGrant = max(r.lastGrant, ev.T)
		r.grants++
	}
	if ev.F == history.Acquire && (ev.Type == history.Fail || ev.Type == history.Info) {
		r.lastRefused = max(r.lastRefused, ev.T)
	}
	if ev.F == history.Acquire {
		if ev.Type == history.Invoke {
			if r.invoked == nil {
				r.invoked = map[int]int64{}
			}
			r.invoked[ev.Proc] = ev.T
		} else if t0, ok := r.invoked[ev.Proc]; ok {
			delete(r.invoked, ev.Proc)
			if len(r.latencies) < maxLatencyPoints {
				r.latencies = append(r.latencies, report.LatencyPoint{T: ev.T, Latency: ev.T - t0, Outcome: string(ev.Type)})
			}
		}
	}
	r.mu.Unlock()
	if r.observe != nil {
		r.observe(ev)
	}
	return ev
}

// grantCount is how many acquires succeeded so far.
func (r *checkingRecorder) grantCount() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grants
}

// snapshot is the checker's verdict on the events so far (checker.Snapshot);
// empty when nothing is checked.
func (r *checkingRecorder) snapshot() checker.Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.check == nil {
		return checker.Verdict{}
	}
	return r.check.Snapshot()
}

// grantedSince reports whether an acquire succeeded at or after t.
func (r *checkingRecorder) grantedSince(t int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastGrant >= t
}

// blockedSince reports whether, from t on, clients asked for the lock and
// nobody was granted it: an acquire ended without a grant, refused or with
// its deadline struck mid-call (indeterminate, which a loaded machine makes
// of most timeouts), and none succeeded.
func (r *checkingRecorder) blockedSince(t int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastGrant < t && r.lastRefused >= t
}

// starved says whether a key stayed stuck well past when f frees it
// (verdict.Starvation).
func (r *checkingRecorder) starved(f verdict.Freeing) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.starve.Starved(f)
	return ok
}

// granted says whether any acquire succeeded (event times are positive).
func (r *checkingRecorder) granted() bool { return r.grantedSince(1) }

// span is the first and last event time seen.
func (r *checkingRecorder) span() (int64, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first, r.last
}

// lockMetrics is the hand-off and fairness measured so far.
func (r *checkingRecorder) lockMetrics() *metrics.Locks {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.locks
}

// stallsSeen are the stalls recorded through it.
func (r *checkingRecorder) stallsSeen() []verdict.Stall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]verdict.Stall(nil), r.stalls...)
}

// at is the time and client of the checked event with index i.
func (r *checkingRecorder) at(i int64) (int64, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.times.at(i)
}

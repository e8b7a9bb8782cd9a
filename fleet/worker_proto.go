package fleet

import (
	"encoding/json"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/workload"
)

// The worker protocol: JSON lines over the worker's stdin and stdout.
// A `locklab worker` process is one workload client. Its history events are
// stamped with CLOCK_MONOTONIC, the same clock in every process of the
// machine, so they merge with locklab's own exactly. The protected store
// stays in locklab's process (it must order the writes it records); the
// worker calls it over the pipe.

// toWorker is a message from the fleet.
type toWorker struct {
	Start *workerStart `json:"start,omitempty"`
	Reply *storeReply  `json:"reply,omitempty"`
	// Clock moves the worker's lease clock by this many ns relative to
	// real time (a client-clock fault).
	Clock *int64 `json:"clock,omitempty"`
	// Go starts a worker that was told to wait (workerStart.Wait): the
	// run ends at this CLOCK_MONOTONIC time.
	Go *int64 `json:"go,omitempty"`
	// Hang halts the worker client's own steps (true) or lets them go on
	// (false): a client-hang fault.
	Hang *bool `json:"hang,omitempty"`
	// Finish ends the worker's run now, as if its end had come (Fleet.Finish).
	Finish bool `json:"finish,omitempty"`
}

// workerStart is everything one worker client needs.
type workerStart struct {
	Approach  string          `json:"approach"`
	Endpoints impls.Endpoints `json:"endpoints"`
	Proc      int             `json:"proc"`
	Slot      int             `json:"slot"`
	// EndMono is when the run ends, on CLOCK_MONOTONIC: a replacement
	// started late ends with everyone else.
	EndMono int64 `json:"end_mono"`
	// Wait: connect, say Ready, and wait for Go (which sets EndMono)
	// before working. A case's first workers wait, so the case's clock
	// (its duration, its faults' times) starts when every client is
	// connected, as with goroutine clients, however long the processes
	// took to start on a loaded machine.
	Wait bool `json:"wait,omitempty"`
	// Workload is the case's; the worker runs it as one client.
	Workload    workload.Spec `json:"workload"`
	ClockOffset int64         `json:"clock_offset"`
	// Stall runs the stall monitor's probe in the worker, which sends
	// each stall as a history event; nil: none.
	Stall *stall.Probe `json:"stall,omitempty"`
}

// fromWorker is a message from a worker.
type fromWorker struct {
	Event *history.Event `json:"ev,omitempty"`
	Call  *storeCall     `json:"call,omitempty"`
	End   *workerEnd     `json:"end,omitempty"`
	// Fatal: the worker could not start (bad approach, unreachable server).
	Fatal string `json:"fatal,omitempty"`
	// Ready: a waiting worker has connected.
	Ready bool `json:"ready,omitempty"`
	// Halted answers a hang: the worker's steps are halted, and a write
	// it had under way is done (its call came before this line).
	Halted bool `json:"halted,omitempty"`
}

// storeCall is one call of workload.Resource.
type storeCall struct {
	ID    int64   `json:"id"`
	Op    string  `json:"op"` // read, write, process, done
	Proc  int     `json:"proc"`
	Key   string  `json:"key"`
	V     int64   `json:"v,omitempty"`
	Read  int64   `json:"read,omitempty"`
	Token *uint64 `json:"token,omitempty"`
}

type storeReply struct {
	ID   int64  `json:"id"`
	N    int64  `json:"n"`
	Done bool   `json:"done,omitempty"`
	Err  string `json:"err,omitempty"`
	// Stale: the store refused a stale fencing token.
	Stale bool `json:"stale,omitempty"`
}

// workerEnd is a worker's last word: what it measured, and whether it
// retires because an outcome was indeterminate (then the fleet replaces
// it under a new process id).
type workerEnd struct {
	Retired        bool                   `json:"retired"`
	Acquire        *hdrhistogram.Snapshot `json:"acquire"`
	Release        *hdrhistogram.Snapshot `json:"release"`
	Acquired       int64                  `json:"acquired"`
	NotAcquired    int64                  `json:"not_acquired"`
	Indeterminate  int64                  `json:"indeterminate"`
	Errors         int64                  `json:"errors"`
	Unavailable    int64                  `json:"unavailable"`
	ReleaseNotHeld int64                  `json:"release_not_held"`
	Renewals       int64                  `json:"renewals"`
	Reentries      int64                  `json:"reentries,omitempty"`
	Lost           int64                  `json:"lost"`
	FirstError     string                 `json:"first_error,omitempty"`
}

func endOf(st workload.Stats, retired bool) *workerEnd {
	return &workerEnd{Retired: retired, Acquire: st.Acquire.Export(), Release: st.Release.Export(),
		Acquired: st.Acquired, NotAcquired: st.NotAcquired, Indeterminate: st.Indeterminate, Errors: st.Errors, Unavailable: st.Unavailable,
		ReleaseNotHeld: st.ReleaseNotHeld, Renewals: st.Renewals, Reentries: st.Reentries, Lost: st.Lost, FirstError: st.FirstError}
}

// stats turns a worker's last word back into workload stats.
func (e *workerEnd) stats() workload.Stats {
	st := workload.Stats{Acquire: workload.NewHistogram(), Release: workload.NewHistogram(),
		Acquired: e.Acquired, NotAcquired: e.NotAcquired, Indeterminate: e.Indeterminate, Errors: e.Errors, Unavailable: e.Unavailable,
		ReleaseNotHeld: e.ReleaseNotHeld, Renewals: e.Renewals, Reentries: e.Reentries, Lost: e.Lost, FirstError: e.FirstError}
	for _, x := range []struct {
		s *hdrhistogram.Snapshot
		h *hdrhistogram.Histogram
	}{{e.Acquire, st.Acquire}, {e.Release, st.Release}} {
		if x.s != nil && x.s.Validate() == nil {
			x.h.Merge(hdrhistogram.Import(x.s))
		}
	}
	return st
}

func encodeLine(v any) []byte {
	b, _ := json.Marshal(v) // plain structs: cannot fail
	return append(b, '\n')
}

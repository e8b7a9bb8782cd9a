package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/workload"
)

// ServeWorker is `locklab worker`: one workload client in its own process,
// so that a fault can stop it whole (SIGSTOP stops its heartbeats,
// keep-alives and renewals too, as a GC pause does) or kill it. It reads
// its start message from in, streams its history events and store calls to
// out, and ends with its stats. EOF on in means the fleet is gone or wants
// it to stop: it stops at once.
func ServeWorker(ctx context.Context, reg *impls.Registry, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &workerSide{out: out, calls: map[int64]chan storeReply{}, done: ctx.Done()}
	dec := json.NewDecoder(bufio.NewReader(in))
	var first toWorker
	if err := dec.Decode(&first); err != nil {
		return fmt.Errorf("worker: read start: %w", err)
	}
	st := first.Start
	if st == nil {
		return errors.New("worker: first message is not a start")
	}
	mono := clock.NewMonotonic()
	if st.Stall != nil {
		// The probe watches the whole process, from its start message to
		// its exit: a worker stopped while it connects stalls too.
		who := fmt.Sprintf("worker %d", st.Proc)
		probed := make(chan struct{})
		defer func() { cancel(); <-probed }()
		go func() {
			defer close(probed)
			st.Stall.Run(ctx, mono.Nanos, func(s stall.Span) {
				ev := history.StallEvent(who, s.Start, s.End)
				w.send(fromWorker{Event: &ev})
			})
		}()
	}
	clk := &clock.Skewable{}
	clk.SetOffset(time.Duration(st.ClockOffset))
	begin := make(chan int64, 1)
	halt := &workload.Halt{}
	finish := make(chan struct{})
	finishOnce := sync.OnceFunc(func() { close(finish) })
	// Everything after the start message: replies, clock moves, go, hangs.
	go func() {
		defer cancel()
		for {
			var m toWorker
			if err := dec.Decode(&m); err != nil {
				return
			}
			switch {
			case m.Reply != nil:
				w.mu.Lock()
				ch := w.calls[m.Reply.ID]
				delete(w.calls, m.Reply.ID)
				w.mu.Unlock()
				if ch != nil {
					ch <- *m.Reply
				}
			case m.Clock != nil:
				clk.SetOffset(time.Duration(*m.Clock))
			case m.Go != nil:
				select {
				case begin <- *m.Go:
				default:
				}
			case m.Finish:
				finishOnce()
			case m.Hang != nil && *m.Hang:
				halt.On()
			case m.Hang != nil:
				halt.Off()
			}
		}
	}()
	a, err := reg.Get(st.Approach)
	if err != nil {
		w.send(fromWorker{Fatal: err.Error()})
		return err
	}
	l, err := a.New(ctx, impls.Env{Endpoints: st.Endpoints, Clock: clk, ClientID: st.Proc})
	if err != nil {
		w.send(fromWorker{Fatal: fmt.Sprintf("connect %s: %v", a.Name, err)})
		return err
	}
	defer l.Close()
	if st.Wait {
		w.send(fromWorker{Ready: true})
		select {
		case st.EndMono = <-begin:
		case <-ctx.Done(): // the fleet is gone or stopping: EndMono 0 ends at once
		}
	}
	left := time.Duration(st.EndMono - mono.Nanos())
	if left <= 0 {
		w.send(fromWorker{End: endOf(workload.Stats{Acquire: workload.NewHistogram(), Release: workload.NewHistogram()}, false)})
		return nil
	}
	// The case's workload, as its one client recording as st.Proc. An
	// open loop's rate is over all clients, which no worker sees: workers
	// run closed loops (bench refuses --rate with --processes). Its draws
	// (holds, keys) are seeded by its number within the case, not its
	// process id, which counts on over a session's cases: the same case
	// draws the same holds wherever it runs (a scenario explore found,
	// run again by locklab run).
	spec := st.Workload
	spec.Clients, spec.Duration, spec.Seed, spec.ProcBase, spec.Rate, spec.Store = 1, left, spec.Seed^uint64(st.Proc-st.Workload.ProcBase), st.Proc, 0, nil
	spec.Finish = finish
	if spec.Kind == workload.Counter || spec.Kind == workload.Tasks {
		spec.Store = w
	}
	// No connect: a worker whose outcome was indeterminate retires; the
	// fleet starts its replacement as a new process.
	stats, err := workload.Run(ctx, spec, []workload.Client{{Locker: l, Clock: clk, Halt: halt}}, nil, w, mono, nil)
	if err != nil {
		w.send(fromWorker{Fatal: err.Error()})
		return err
	}
	w.send(fromWorker{End: endOf(stats, stats.Indeterminate > 0 || w.retired.Load())})
	return nil
}

// workerSide is the worker's end of the pipe: a history.Recorder and a
// workload.Resource.
type workerSide struct {
	outMu   sync.Mutex
	out     io.Writer
	mu      sync.Mutex
	calls   map[int64]chan storeReply
	nextID  atomic.Int64
	retired atomic.Bool
	done    <-chan struct{} // the fleet is gone: store calls fail
}

// send writes one line; each is written whole with one call, unbuffered,
// so a SIGSTOP or SIGKILL never leaves half a line behind a full one.
func (w *workerSide) send(m fromWorker) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	_, _ = w.out.Write(encodeLine(m))
}

// Record streams one history event to the fleet.
func (w *workerSide) Record(ev history.Event) history.Event {
	if ev.Type == history.Info && (ev.F == history.Acquire || ev.F == history.Release) {
		w.retired.Store(true)
	}
	w.send(fromWorker{Event: &ev})
	return ev
}

func (w *workerSide) call(c storeCall) storeReply {
	c.ID = w.nextID.Add(1)
	ch := make(chan storeReply, 1)
	w.mu.Lock()
	w.calls[c.ID] = ch
	w.mu.Unlock()
	w.send(fromWorker{Call: &c})
	select {
	case r := <-ch:
		return r
	case <-w.done:
		return storeReply{ID: c.ID, Err: "fleet gone"}
	}
}

func replyErr(r storeReply) error {
	switch {
	case r.Err == "":
		return nil
	case r.Stale:
		return fmt.Errorf("%w: %s", workload.ErrStaleToken, r.Err)
	}
	return errors.New(r.Err)
}

// Read calls the case's store, in locklab's process.
func (w *workerSide) Read(proc int, key string, token *uint64) (int64, error) {
	r := w.call(storeCall{Op: "read", Proc: proc, Key: key, Token: token})
	return r.N, replyErr(r)
}

// Write calls the case's store, in locklab's process.
func (w *workerSide) Write(proc int, key string, v, read int64, token *uint64) error {
	return replyErr(w.call(storeCall{Op: "write", Proc: proc, Key: key, V: v, Read: read, Token: token}))
}

// Process calls the case's store, in locklab's process.
func (w *workerSide) Process(proc int, key string, token *uint64) (int, error) {
	r := w.call(storeCall{Op: "process", Proc: proc, Key: key, Token: token})
	return int(r.N), replyErr(r)
}

// Done calls the case's store, in locklab's process.
func (w *workerSide) Done(key string) bool {
	return w.call(storeCall{Op: "done", Key: key}).Done
}

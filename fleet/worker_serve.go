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
	st, err := readStart(dec)
	if err != nil {
		return err
	}
	mono := clock.NewMonotonic()
	if st.Stall != nil {
		defer w.probeStalls(ctx, cancel, st, mono)()
	}
	ctl := newWorkerControl(st.ClockOffset)
	// Everything after the start message; EOF ends the worker.
	go func() {
		defer cancel()
		w.follow(ctx, dec, ctl)
	}()
	l, err := w.lockClient(ctx, reg, st, ctl.clk)
	if err != nil {
		return err
	}
	defer l.Close()
	if st.Wait {
		w.send(fromWorker{Ready: true})
		select {
		case st.EndMono = <-ctl.begin:
		case <-ctx.Done(): // the fleet is gone or stopping: EndMono 0 ends at once
		}
	}
	return w.run(ctx, st, l, ctl, mono)
}

// readStart reads the start message, the first the fleet sends.
func readStart(dec *json.Decoder) (*workerStart, error) {
	var first toWorker
	if err := dec.Decode(&first); err != nil {
		return nil, fmt.Errorf("worker: read start: %w", err)
	}
	if first.Start == nil {
		return nil, errors.New("worker: first message is not a start")
	}
	return first.Start, nil
}

// probeStalls runs the start's stall probe, sending each stall as a
// history event, until ctx ends; wait cancels it and waits for it.
func (w *workerSide) probeStalls(ctx context.Context, cancel context.CancelFunc, st *workerStart, mono *clock.Monotonic) (wait func()) {
	// The probe watches the whole process, from its start message to its
	// exit: a worker stopped while it connects stalls too.
	who := fmt.Sprintf("worker %d", st.Proc)
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		// The send waits on the pipe to locklab: never in the probe's loop.
		report, drain := stall.Detached(func(s stall.Span) {
			ev := history.StallEvent(who, s.Start, s.End)
			w.send(fromWorker{Event: &ev})
		})
		defer drain()
		st.Stall.Run(ctx, mono.Nanos, report)
	}()
	return func() { cancel(); <-probed }
}

// workerControl is what the fleet's messages after the start act on.
type workerControl struct {
	clk        *clock.Skewable // the lock client's clock
	begin      chan int64      // Go: when the run ends
	halt       *workload.Halt
	finish     chan struct{} // closed by Finish
	finishOnce func()
}

func newWorkerControl(clockOffset int64) *workerControl {
	clk := &clock.Skewable{}
	clk.SetOffset(time.Duration(clockOffset))
	finish := make(chan struct{})
	return &workerControl{clk: clk, begin: make(chan int64, 1), halt: &workload.Halt{}, finish: finish,
		finishOnce: sync.OnceFunc(func() { close(finish) })}
}

// follow acts on the fleet's messages (replies, clock moves, go, finish,
// hangs) until its end of the pipe closes.
func (w *workerSide) follow(ctx context.Context, dec *json.Decoder, ctl *workerControl) {
	for {
		var m toWorker
		if err := dec.Decode(&m); err != nil {
			return
		}
		if m.Reply != nil {
			w.deliver(*m.Reply)
			continue
		}
		ctl.apply(m)
		if m.Hang != nil && *m.Hang {
			// Said once a write under way has had its reply, which this
			// loop delivers: so not from here. The fleet reads the
			// write's call before this line.
			go func() {
				if ctl.halt.Settled(ctx) == nil {
					w.send(fromWorker{Halted: true})
				}
			}()
		}
	}
}

// deliver hands a store call's reply to the call waiting for it.
func (w *workerSide) deliver(r storeReply) {
	w.mu.Lock()
	ch := w.calls[r.ID]
	delete(w.calls, r.ID)
	w.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// apply acts on one message other than a reply.
func (ctl *workerControl) apply(m toWorker) {
	switch {
	case m.Clock != nil:
		ctl.clk.SetOffset(time.Duration(*m.Clock))
	case m.Go != nil:
		select {
		case ctl.begin <- *m.Go:
		default:
		}
	case m.Finish:
		ctl.finishOnce()
	case m.Hang != nil && *m.Hang:
		ctl.halt.On()
	case m.Hang != nil:
		ctl.halt.Off()
	}
}

// lockClient connects the start's approach; the fleet is told if it cannot.
func (w *workerSide) lockClient(ctx context.Context, reg *impls.Registry, st *workerStart, clk clock.Clock) (impls.Locker, error) {
	a, err := reg.Get(st.Approach)
	if err != nil {
		w.send(fromWorker{Fatal: err.Error()})
		return nil, err
	}
	l, err := a.New(ctx, impls.Env{Endpoints: st.Endpoints, Clock: clk, ClientID: st.Proc})
	if err != nil {
		w.send(fromWorker{Fatal: fmt.Sprintf("connect %s: %v", a.Name, err)})
		return nil, err
	}
	return l, nil
}

// run runs the case's workload on l until st.EndMono and sends its stats.
func (w *workerSide) run(ctx context.Context, st *workerStart, l impls.Locker, ctl *workerControl, mono *clock.Monotonic) error {
	left := time.Duration(st.EndMono - mono.Nanos())
	if left <= 0 {
		w.send(fromWorker{End: endOf(workload.Stats{Acquire: workload.NewHistogram(), Release: workload.NewHistogram()}, false)})
		return nil
	}
	// No connect: a worker whose outcome was indeterminate retires; the
	// fleet starts its replacement as a new process.
	stats, err := workload.Run(ctx, st.spec(left, ctl.finish, w), []workload.Client{{Locker: l, Clock: ctl.clk, Halt: ctl.halt}}, nil, w, mono, nil)
	if err != nil {
		w.send(fromWorker{Fatal: err.Error()})
		return err
	}
	w.send(fromWorker{End: endOf(stats, stats.Indeterminate > 0 || w.retired.Load())})
	return nil
}

// spec is the case's workload, as its one client recording as st.Proc,
// for left more, working on store. An open loop's rate is over all
// clients, which no worker sees: workers run closed loops (bench refuses
// --rate with --processes). Its draws (holds, keys) are seeded by its
// number within the case, not its process id, which counts on over a
// session's cases: the same case draws the same holds wherever it runs (a
// scenario explore found, run again by locklab run).
func (st *workerStart) spec(left time.Duration, finish <-chan struct{}, store workload.Resource) workload.Spec {
	spec := st.Workload
	spec.Clients, spec.Duration, spec.Seed, spec.ProcBase, spec.Rate, spec.Store = 1, left, spec.Seed^uint64(st.Proc-st.Workload.ProcBase), st.Proc, 0, nil
	spec.Finish = finish
	if spec.Kind == workload.Counter || spec.Kind == workload.Tasks {
		spec.Store = store
	}
	return spec
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

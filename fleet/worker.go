package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/spawn"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/workload"
)

// workers run a case's clients as `locklab worker` processes, one per
// client: a fault can then pause or kill a client whole. A worker that
// crashes, or retires after an indeterminate outcome, is replaced by a new
// process under a new process id (Jepsen's rule); the lock it may hold is
// left to the server.
type workers struct {
	cfg      Config
	argv     []string    // starts one worker: locklab worker
	start    workerStart // template; Proc, Slot, Wait, EndMono, ClockOffset set per worker
	log      *os.File    // the workers' stderr
	spawn    *spawn.Spawner
	nextProc atomic.Int64
	slots    []*workerSlot
	// endMono is when the run ends (CLOCK_MONOTONIC ns), set by Run, and
	// by Finish to now.
	endMono atomic.Int64
	// finishing: Finish was called; a worker started since is told too.
	finishing atomic.Bool
	// ready counts the first workers not yet connected (or failed);
	// begun is closed by Run, which lets them go.
	ready sync.WaitGroup
	begun chan struct{}
	// startFailed: a first worker could not start or connect.
	startFailed atomic.Bool
	cancel      context.CancelFunc // stops every worker: stdin closed
	done        chan runResult     // the run's one result
	finished    chan struct{}      // closed once the run has returned
}

// runResult is what a fleet's run came to.
type runResult struct {
	stats workload.Stats
	err   error
}

// workerSlot is a process slot whose worker does lease arithmetic on a
// clock moved by an offset (client-clock faults), which replacements keep.
type workerSlot struct {
	processSlot
	clock int64 // ns; guarded by processSlot.mu
	// shiftMu keeps the offsets told to the worker in the order they
	// were made.
	shiftMu sync.Mutex
}

// newWorkers starts every slot's first worker and returns once each has
// connected; they wait for Run.
func newWorkers(ctx context.Context, cfg Config) (*workers, error) {
	argv := cfg.WorkerArgv
	if argv == nil {
		var err error
		if argv, err = workerArgv(); err != nil {
			return nil, err
		}
	}
	log, err := os.OpenFile(filepath.Join(cfg.Dir, "workers.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	spec := cfg.Workload
	if spec.Drain == 0 {
		spec.Drain = time.Second
	}
	f := &workers{cfg: cfg, argv: argv, log: log, start: workerStart{Approach: cfg.Approach.Name, Workload: spec, Stall: cfg.Stall},
		spawn: spawn.New(), begun: make(chan struct{}), done: make(chan runResult, 1), finished: make(chan struct{})}
	// Slot i starts as process ProcBase+i, as goroutine clients do;
	// replacements count on from ProcBase+Clients.
	f.nextProc.Store(int64(spec.ProcBase + spec.Clients))
	for i := range spec.Clients {
		f.slots = append(f.slots, &workerSlot{processSlot: processSlot{index: i, now: cfg.Mono.Nanos}})
	}
	ctx, f.cancel = context.WithCancel(ctx)
	f.ready.Add(len(f.slots))
	go func() {
		defer close(f.finished)
		st, err := f.run(ctx)
		f.done <- runResult{st, err}
	}()
	f.ready.Wait()
	if f.startFailed.Load() {
		f.Close()
		r := <-f.done
		return nil, r.err
	}
	return f, nil
}

func (f *workers) Slots() []Slot {
	out := make([]Slot, len(f.slots))
	for i, s := range f.slots {
		out[i] = Slot{Index: i, Clock: s, Process: s}
	}
	return out
}

// Run lets the connected workers go; the run ends Workload.Duration from
// now, for replacements started late too.
func (f *workers) Run(ctx context.Context) (workload.Stats, error) {
	stop := context.AfterFunc(ctx, f.cancel)
	defer stop()
	f.endMono.Store(f.cfg.Mono.Nanos() + int64(f.cfg.Workload.Duration))
	close(f.begun)
	r := <-f.done
	return r.stats, r.err
}

// workerStopGrace is how long a worker told to stop may take before it is
// killed: its release has 5 s of its own.
const workerStopGrace = 10 * time.Second

// Finish ends the run now: no replacement starts, and every running
// worker is told to end as if its end time had come. A worker that is
// starting meanwhile is told by runWorker, which reads finishing after it
// made the worker its slot's current one.
func (f *workers) Finish() {
	f.endMono.Store(min(f.endMono.Load(), f.cfg.Mono.Nanos()))
	f.finishing.Store(true)
	for _, s := range f.slots {
		if p := s.current(); p != nil {
			_ = p.send(toWorker{Finish: true})
		}
	}
}

// Close resumes any worker still paused (so it can exit), stops those
// still running (none, after Run) and closes the workers' log.
func (f *workers) Close() {
	for _, s := range f.slots {
		_ = s.Resume()
	}
	f.cancel()
	<-f.finished
	_ = f.log.Close()
}

// run keeps every slot filled until the run's end, and returns the merged
// stats. The first worker of each slot must start (else an infrastructure
// error); a replacement that cannot connect (a server is down) is tried
// again until the run ends.
func (f *workers) run(ctx context.Context) (workload.Stats, error) {
	defer f.spawn.Close()
	started := time.Now()
	results := make([]workload.Stats, len(f.slots))
	errs := make([]error, len(f.slots))
	var wg sync.WaitGroup
	for i, s := range f.slots {
		wg.Add(1)
		go func(i int, s *workerSlot) {
			defer wg.Done()
			results[i], errs[i] = f.runSlot(ctx, s)
		}(i, s)
	}
	wg.Wait()
	total := workload.Stats{Acquire: workload.NewHistogram(), Release: workload.NewHistogram(), Elapsed: time.Since(started)}
	for _, r := range results {
		if r.Acquire != nil {
			total.Merge(r)
		}
	}
	total.Procs = int(f.nextProc.Load()) - f.cfg.Workload.ProcBase
	return total, errors.Join(errs...)
}

func (f *workers) over() bool { return f.cfg.Mono.Nanos() >= f.endMono.Load() }

// firstTries is how many times a slot's first client is started before
// the case fails for want of it, firstRetryPause apart: on a starved
// machine a client's first requests time out (seen: redlock's pings of its
// five nodes, at a load of 29, ending a 1,760-run matrix with exit 3 after
// 500 s).
const (
	firstTries      = 3
	firstRetryPause = 500 * time.Millisecond
)

// startAgain calls start (try 1, 2, ...) until it says not again, or
// firstTries were made, or ctx ends.
func startAgain(ctx context.Context, start func(try int) (again bool)) {
	for try := 1; start(try) && try < firstTries; try++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(firstRetryPause):
		}
	}
}

// runFirst is runWorker for a slot's first worker, started again (as the
// same process id: it recorded nothing) while it could not connect.
func (f *workers) runFirst(ctx context.Context, s *workerSlot, proc int, ready func()) (end *workerEnd, fatal string, killedAt int64, err error) {
	saidReady := false // it connected: what failed after may have been recorded
	said := func() { saidReady = true; ready() }
	startAgain(ctx, func(try int) bool {
		end, fatal, killedAt, err = f.runWorker(ctx, s, proc, true, said)
		again := !saidReady && err == nil && fatal != "" && ctx.Err() == nil
		if again && try < firstTries {
			fmt.Fprintf(f.log, "worker %d: %s; starting it again (try %d of %d)\n", proc, fatal, try+1, firstTries)
		}
		return again
	})
	return end, fatal, killedAt, err
}

func (f *workers) runSlot(ctx context.Context, s *workerSlot) (workload.Stats, error) {
	st := workload.Stats{Acquire: workload.NewHistogram(), Release: workload.NewHistogram()}
	proc := f.cfg.Workload.ProcBase + s.index
	// The first worker is ready once it says so or ends; replacements
	// start after Run and do not wait.
	ready := sync.OnceFunc(f.ready.Done)
	for first := true; ; first = false {
		var (
			end       *workerEnd
			fatal     string
			crashedAt int64
			err       error
		)
		if first {
			end, fatal, crashedAt, err = f.runFirst(ctx, s, proc, ready)
		} else {
			proc = int(f.nextProc.Add(1) - 1)
			end, fatal, crashedAt, err = f.runWorker(ctx, s, proc, false, ready)
		}
		if first && (err != nil || fatal != "") {
			f.startFailed.Store(true)
		}
		ready()
		switch {
		case err != nil:
			return st, err
		case fatal != "" && first:
			return st, fmt.Errorf("client %d: %s", s.index, fatal)
		case fatal != "":
			// A replacement could not connect (a server is down, a link
			// cut): try again shortly, as a restarted client would.
			st.Errors++
			if st.FirstError == "" {
				st.FirstError = fatal
			}
			select {
			case <-ctx.Done():
				return st, nil
			case <-time.After(100 * time.Millisecond):
			}
		case end == nil:
			// No last word: the worker died (a client-crash fault).
			at := crashedAt
			if at == 0 {
				at = f.cfg.Mono.Nanos()
			}
			f.cfg.Recorder.Record(history.Event{Proc: proc, Type: history.Info, F: history.Crash, T: at})
			st.Crashed++
		default:
			st.Merge(end.stats())
			if !end.Retired {
				return st, nil
			}
		}
		if ctx.Err() != nil || f.over() {
			return st, nil
		}
		st.Replaced++
	}
}

// runWorker runs one worker process to its end. It returns the worker's
// last word (nil if it died without one), or the reason it could not
// start.
// A first worker waits after connecting: ready is called when it says so,
// and Run's end time is sent to it once Run was called.
func (f *workers) runWorker(ctx context.Context, s *workerSlot, proc int, first bool, ready func()) (end *workerEnd, fatal string, killedAt int64, err error) {
	start := f.start
	start.Proc, start.Slot = proc, s.index
	start.Wait, start.EndMono = first, f.endMono.Load()
	if start.Endpoints, err = f.cfg.endpoints(s.index); err != nil {
		return nil, "", 0, err
	}
	f.cfg.bind(proc, s.index)
	p, err := startProcess(f.spawn, f.argv, f.log, proc)
	if err != nil {
		return nil, "", 0, fmt.Errorf("start worker: %w", err)
	}
	s.hold(p, func() { start.ClockOffset = s.clock })
	_ = p.send(toWorker{Start: &start})
	if f.finishing.Load() {
		_ = p.send(toWorker{Finish: true})
	}
	// On Ctrl-C, closing stdin tells the worker to stop: it releases what
	// it holds and sends its last word. One that has not exited
	// workerStopGrace later (stopped by a fault nobody healed, or stuck in
	// a call that ignores its context: a driver blocked on a dead server)
	// is killed, so a case that was cut short never hangs on it.
	stopWatch := context.AfterFunc(ctx, func() {
		p.closeInput()
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		go func() {
			select {
			case <-p.exited:
			case <-time.After(workerStopGrace):
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
			}
		}()
	})
	defer stopWatch()

	sc := p.lines()
	for sc.Scan() {
		var m fromWorker
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintf(f.log, "worker %d: bad line: %v\n", proc, err)
			continue
		}
		switch {
		case m.Event != nil && m.Event.F == history.Stall:
			f.recordStall(p, *m.Event)
		case m.Event != nil:
			if m.Event.F == history.Acquire && m.Event.Type == history.OK && f.cfg.Progress != nil {
				f.cfg.Progress.Acquired.Add(1)
			}
			f.cfg.Recorder.Record(*m.Event)
		case m.Call != nil:
			_ = p.send(toWorker{Reply: f.serve(*m.Call)})
		case m.End != nil:
			end = m.End
		case m.Fatal != "":
			fatal = m.Fatal
		case m.Halted:
			select {
			case p.halted <- struct{}{}:
			default:
			}
		case m.Ready:
			ready()
			go func() {
				select {
				case <-f.begun:
					end := f.endMono.Load()
					_ = p.send(toWorker{Go: &end})
				case <-p.exited:
				}
			}()
		}
	}
	return end, fatal, s.wait(p), nil
}

// recordStall records what a worker's probe reported, less the stretches
// a fault paused the worker on purpose: a client pause is that fault, not
// a stall of the lab. What is left counts when it is a stall itself (a
// worker starved after its pause).
func (f *workers) recordStall(p *clientProcess, ev history.Event) {
	who, start, end, ok := history.ReadStall(ev)
	if !ok || f.cfg.Stall == nil {
		return
	}
	for _, s := range stall.Minus(stall.Span{Start: start, End: end}, p.pauses()) {
		if f.cfg.Stall.Stalled(s) {
			f.cfg.Recorder.Record(history.StallEvent(who, s.Start, s.End))
		}
	}
}

// serve answers one store call from a worker.
func (f *workers) serve(c storeCall) *storeReply {
	store := f.cfg.Workload.Store
	r := &storeReply{ID: c.ID}
	var err error
	switch {
	case store == nil:
		err = errors.New("this workload has no store")
	case c.Op == "read":
		r.N, err = store.Read(c.Proc, c.Key, c.Token)
	case c.Op == "write":
		err = store.Write(c.Proc, c.Key, c.V, c.Read, c.Token)
	case c.Op == "process":
		var n int
		n, err = store.Process(c.Proc, c.Key, c.Token)
		r.N = int64(n)
	case c.Op == "done":
		r.Done = store.Done(c.Key)
	default:
		err = fmt.Errorf("unknown store call %q", c.Op)
	}
	if err != nil {
		r.Err = err.Error()
		r.Stale = errors.Is(err, workload.ErrStaleToken)
	}
	return r
}

// Hang halts the worker's own steps; the process and its lock client's
// threads go on. A replacement starts unhalted: the hang was its
// predecessor's.
func (s *workerSlot) Hang() error { return s.hang(true) }

// Unhang lets the worker's steps go on.
func (s *workerSlot) Unhang() error { return s.hang(false) }

func (s *workerSlot) hang(on bool) error {
	p := s.current()
	if p == nil {
		return fmt.Errorf("client %d has no running process", s.index)
	}
	select {
	case <-p.halted: // a late answer to an earlier hang
	default:
	}
	if err := p.send(toWorker{Hang: &on}); err != nil {
		return fmt.Errorf("hang client %d: %w", s.index, err)
	}
	if on {
		p.awaitHalted(hangAnswer)
	}
	return nil
}

// hangAnswer is how long a hang waits for the worker to say it is halted.
// A worker stopped by a pause answers once resumed; the hang stands
// either way.
const hangAnswer = 2 * time.Second

// awaitHalted waits up to within for p to say its steps are halted; by
// then the history holds the write it had under way, so a fault that
// checks whether the holder had written reads all of it.
func (p *clientProcess) awaitHalted(within time.Duration) {
	if p.stoppedNow() {
		return
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-p.halted:
	case <-p.exited:
	case <-t.C:
	}
}

// Shift moves the slot's lease clock by d, now and for its replacements.
func (s *workerSlot) Shift(d time.Duration) {
	s.shiftMu.Lock()
	defer s.shiftMu.Unlock()
	s.mu.Lock()
	s.clock += int64(d)
	off, p := s.clock, s.cur
	s.mu.Unlock()
	if p != nil {
		_ = p.send(toWorker{Clock: &off})
	}
}

// Offset is the slot's current clock offset.
func (s *workerSlot) Offset() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.clock)
}

// workerArgv is how this binary starts a worker.
func workerArgv() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find locklab binary for workers: %w", err)
	}
	return []string{exe, "worker"}, nil
}

package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
	"github.com/locklab/locklab/workload"
)

// workerFleet runs a case's clients as `locklab worker` processes, one per
// client: a fault can then pause or kill a client whole. A worker that
// crashes, or retires after an indeterminate outcome, is replaced by a new
// process under a new process id (Jepsen's rule); the lock it may hold is
// left to the server.
type workerFleet struct {
	argv     []string // starts one worker: locklab worker
	log      io.Writer
	start    workerStart // template; Proc and Slot set per worker
	store    workload.Resource
	rec      history.Recorder
	mono     *clock.Monotonic
	prog     *workload.Progress
	spawn    *spawn.Spawner
	procBase int
	nextProc atomic.Int64
	// endpoints gives slot i its servers' addresses (its own proxies when
	// a fault may cut one client's links); nil: start.Endpoints for all.
	endpoints func(slot int) (impls.Endpoints, error)
	// spawned is told which slot each new process id takes.
	spawned func(proc, slot int)
	logFile io.Closer // the workers' stderr, closed with the fleet
	slots   []*workerSlot
	// endMono is when the run ends (CLOCK_MONOTONIC ns), set by begin.
	endMono atomic.Int64
	// ready counts the first workers not yet connected (or failed);
	// begun is closed by begin, which lets them go.
	ready sync.WaitGroup
	begun chan struct{}
}

// fleetResult is what a fleet's run came to.
type fleetResult struct {
	stats workload.Stats
	err   error
}

// launch starts every slot's first worker and returns once each has
// connected or failed to; they wait for begin. The run's result comes on
// the channel it returns.
func (f *workerFleet) launch(ctx context.Context) <-chan fleetResult {
	f.ready.Add(len(f.slots))
	done := make(chan fleetResult, 1)
	go func() {
		st, err := f.run(ctx)
		done <- fleetResult{st, err}
	}()
	f.ready.Wait()
	return done
}

// begin lets the launched workers go; the run ends at endMono.
func (f *workerFleet) begin(endMono int64) {
	f.endMono.Store(endMono)
	close(f.begun)
}

// workerSlot is one client position: the worker process holding it now.
type workerSlot struct {
	index int
	now   func() int64 // CLOCK_MONOTONIC ns, for crash times
	mu    sync.Mutex
	cur   *workerProc
	clock int64 // ns offset of this client's lease clock (client-clock faults)
}

// workerProc is one running worker.
type workerProc struct {
	proc   int // its process id in the history
	cmd    *exec.Cmd
	inMu   sync.Mutex
	stdin  io.WriteCloser
	exited chan struct{}
	// killedAt is when a fault killed it (0: it died by itself).
	killedAt atomic.Int64
}

func (p *workerProc) send(m toWorker) error {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	_, err := p.stdin.Write(encodeLine(m))
	return err
}

func newWorkerFleet(argv []string, log io.Writer, start workerStart, clients, procBase int, store workload.Resource,
	rec history.Recorder, mono *clock.Monotonic, prog *workload.Progress) *workerFleet {
	f := &workerFleet{argv: argv, log: log, start: start, store: store, rec: rec, mono: mono, prog: prog,
		spawn: spawn.New(), procBase: procBase, begun: make(chan struct{})}
	// Slot i starts as process procBase+i, as goroutine clients do;
	// replacements count on from procBase+clients.
	f.nextProc.Store(int64(procBase + clients))
	for i := 0; i < clients; i++ {
		f.slots = append(f.slots, &workerSlot{index: i, now: mono.Nanos})
	}
	return f
}

// run keeps every slot filled until the run's end, and returns the merged
// stats. The first worker of each slot must start (else an infrastructure
// error); a replacement that cannot connect (a server is down) is tried
// again until the run ends.
func (f *workerFleet) run(ctx context.Context) (workload.Stats, error) {
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
	total.Procs = int(f.nextProc.Load()) - f.procBase
	return total, errors.Join(errs...)
}

func (f *workerFleet) over() bool { return f.mono.Nanos() >= f.endMono.Load() }

func (f *workerFleet) runSlot(ctx context.Context, s *workerSlot) (workload.Stats, error) {
	st := workload.Stats{Acquire: workload.NewHistogram(), Release: workload.NewHistogram()}
	proc := f.procBase + s.index
	// The first worker is ready once it says so or ends; replacements
	// start after begin and do not wait.
	ready := sync.OnceFunc(f.ready.Done)
	for first := true; ; first = false {
		if !first {
			proc = int(f.nextProc.Add(1) - 1)
		}
		end, fatal, crashedAt, err := f.runWorker(ctx, s, proc, first, ready)
		ready()
		switch {
		case err != nil:
			return st, infraErr(err)
		case fatal != "" && first:
			return st, infraErr(fmt.Errorf("client %d: %s", s.index, fatal))
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
				at = f.mono.Nanos()
			}
			f.rec.Record(history.Event{Proc: proc, Type: history.Info, F: history.Crash, T: at})
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
// and begin's end time is sent to it once begin was called.
func (f *workerFleet) runWorker(ctx context.Context, s *workerSlot, proc int, first bool, ready func()) (end *workerEnd, fatal string, killedAt int64, err error) {
	cmd := exec.Command(f.argv[0], f.argv[1:]...)
	cmd.Stderr = f.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", 0, err
	}
	start := f.start
	start.Proc, start.Slot = proc, s.index
	start.Wait, start.EndMono = first, f.endMono.Load()
	if f.endpoints != nil {
		ep, err := f.endpoints(s.index)
		if err != nil {
			return nil, "", 0, err
		}
		start.Endpoints = ep
	}
	if f.spawned != nil {
		f.spawned(proc, s.index)
	}
	if err := f.spawn.Start(cmd); err != nil {
		return nil, "", 0, fmt.Errorf("start worker: %w", err)
	}
	wp := &workerProc{proc: proc, cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	s.mu.Lock()
	start.ClockOffset = s.clock
	s.cur = wp
	s.mu.Unlock()
	_ = wp.send(toWorker{Start: &start})
	// On Ctrl-C, closing stdin tells the worker to stop: it releases what
	// it holds and sends its last word.
	stopWatch := context.AfterFunc(ctx, func() { wp.inMu.Lock(); stdin.Close(); wp.inMu.Unlock() })
	defer stopWatch()

	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m fromWorker
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintf(f.log, "worker %d: bad line: %v\n", proc, err)
			continue
		}
		switch {
		case m.Event != nil:
			if m.Event.F == history.Acquire && m.Event.Type == history.OK {
				f.prog.Acquired.Add(1)
			}
			f.rec.Record(*m.Event)
		case m.Call != nil:
			_ = wp.send(toWorker{Reply: f.serve(*m.Call)})
		case m.End != nil:
			end = m.End
		case m.Fatal != "":
			fatal = m.Fatal
		case m.Ready:
			ready()
			go func() {
				select {
				case <-f.begun:
					end := f.endMono.Load()
					_ = wp.send(toWorker{Go: &end})
				case <-wp.exited:
				}
			}()
		}
	}
	_ = cmd.Wait()
	close(wp.exited)
	s.mu.Lock()
	if s.cur == wp {
		s.cur = nil
	}
	s.mu.Unlock()
	return end, fatal, wp.killedAt.Load(), nil
}

// serve answers one store call from a worker.
func (f *workerFleet) serve(c storeCall) *storeReply {
	r := &storeReply{ID: c.ID}
	var err error
	switch c.Op {
	case "read":
		r.N, err = f.store.Read(c.Proc, c.Key, c.Token)
	case "write":
		err = f.store.Write(c.Proc, c.Key, c.V, c.Read, c.Token)
	case "process":
		var n int
		n, err = f.store.Process(c.Proc, c.Key, c.Token)
		r.N = int64(n)
	case "done":
		r.Done = f.store.Done(c.Key)
	default:
		err = fmt.Errorf("unknown store call %q", c.Op)
	}
	if err != nil {
		r.Err = err.Error()
		r.Stale = errors.Is(err, workload.ErrStaleToken)
	}
	return r
}

// The chaos side of a slot: the process holding it now can be paused,
// resumed and killed, and its lease clock moved.

// Pause stops the slot's worker (SIGSTOP): its heartbeats and renewals
// stop with it, as in a GC pause.
func (s *workerSlot) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues the slot's worker (SIGCONT).
func (s *workerSlot) Resume() error { return s.signal(syscall.SIGCONT) }

// Kill kills the slot's worker (SIGKILL) and returns when it is gone; the
// fleet records the crash and starts a replacement.
func (s *workerSlot) Kill() error {
	s.mu.Lock()
	wp := s.cur
	s.mu.Unlock()
	if wp == nil {
		return fmt.Errorf("client %d has no running process", s.index)
	}
	// The crash happens now, not when the runner notices the exit: the
	// server may free the lock (a dropped connection) and grant it to
	// someone else in between, and the history must not show the crashed
	// holder still holding then.
	if s.now != nil {
		wp.killedAt.Store(s.now())
	}
	if err := wp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill client %d: %w", s.index, err)
	}
	select {
	case <-wp.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill client %d: still running after 10s", s.index)
	}
}

func (s *workerSlot) signal(sig syscall.Signal) error {
	s.mu.Lock()
	wp := s.cur
	s.mu.Unlock()
	if wp == nil {
		return fmt.Errorf("client %d has no running process", s.index)
	}
	if err := wp.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal client %d: %w", s.index, err)
	}
	return nil
}

// SetOffset moves the slot's lease clock, now and for its replacements.
func (s *workerSlot) SetOffset(d time.Duration) {
	s.mu.Lock()
	s.clock = int64(d)
	wp := s.cur
	s.mu.Unlock()
	if wp != nil {
		off := int64(d)
		_ = wp.send(toWorker{Clock: &off})
	}
}

// Offset is the slot's current clock offset.
func (s *workerSlot) Offset() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.clock)
}

// Proc is the process id the slot records as now (-1 if none runs).
func (s *workerSlot) Proc() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return -1
	}
	return s.cur.proc
}

// close resumes any worker still paused (so it can exit) and closes the
// workers' log.
func (f *workerFleet) close() {
	for _, s := range f.slots {
		_ = s.Resume()
	}
	if f.logFile != nil {
		_ = f.logFile.Close()
	}
}

// workerArgv is how this binary starts a worker.
func workerArgv() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find locklab binary for workers: %w", err)
	}
	return []string{exe, "worker"}, nil
}

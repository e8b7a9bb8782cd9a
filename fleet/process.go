package fleet

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locklab/locklab/spawn"
	"github.com/locklab/locklab/stall"
)

// processSlot is one client position held by an OS process: a `locklab
// worker` today, a user's adapter speaking the lock protocol next. Faults
// pause, resume and kill whichever process holds the slot now; when it
// dies, its fleet starts a replacement under a new process id (Jepsen's
// rule), which takes the slot over.
type processSlot struct {
	index int
	now   func() int64 // CLOCK_MONOTONIC ns, for crash times
	mu    sync.Mutex
	cur   *clientProcess
}

// clientProcess is one running client process, speaking JSON lines on
// its stdin and stdout.
type clientProcess struct {
	proc   int // its process id in the history
	cmd    *exec.Cmd
	inMu   sync.Mutex
	stdin  io.WriteCloser
	stdout io.Reader
	exited chan struct{}
	// halted carries the worker's answers to hangs (fromWorker.Halted).
	halted chan struct{}
	// killedAt is when a fault killed it (0: it died by itself).
	killedAt atomic.Int64
	// paused are the stretches a fault stopped it (SIGSTOP to SIGCONT;
	// End 0 while it is stopped): its probe's stalls then are the fault.
	pauseMu sync.Mutex
	paused  []stall.Span
}

// pauses are the stretches p was stopped on purpose so far.
func (p *clientProcess) pauses() []stall.Span {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	return append([]stall.Span(nil), p.paused...)
}

// stopping notes a pause beginning at t; resumed ends an open one at t.
func (p *clientProcess) stopping(t int64) {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	p.paused = append(p.paused, stall.Span{Start: t})
}

// stoppedNow reports whether a pause has p stopped now.
func (p *clientProcess) stoppedNow() bool {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	n := len(p.paused)
	return n > 0 && p.paused[n-1].End == 0
}

func (p *clientProcess) resumed(t int64) {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	if n := len(p.paused); n > 0 && p.paused[n-1].End == 0 {
		p.paused[n-1].End = t
	}
}

// startProcess starts argv as process proc (of the history), its stderr
// to log; it dies with locklab.
func startProcess(sp *spawn.Spawner, argv []string, log io.Writer, proc int) (*clientProcess, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := sp.Start(cmd); err != nil {
		return nil, err
	}
	out := io.Reader(stdout)
	if f, ok := stdout.(*os.File); ok {
		out = &watchedPipe{f: f}
	}
	return &clientProcess{proc: proc, cmd: cmd, stdin: stdin, stdout: out, exited: make(chan struct{}), halted: make(chan struct{}, 1)}, nil
}

// send writes v as one JSON line.
func (p *clientProcess) send(v any) error {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	_, err := p.stdin.Write(encodeLine(v))
	return err
}

// closeInput closes the process's stdin: the protocol's way of telling it
// to stop.
func (p *clientProcess) closeInput() {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	p.stdin.Close()
}

// lines reads the process's stdout line by line, until it exits.
func (p *clientProcess) lines() *bufio.Scanner {
	sc := bufio.NewScanner(p.stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return sc
}

// hold makes p the slot's process; under, if set, runs while the slot is
// locked (a worker takes its clock offset there, so a clock fault lands
// either in its start message or after it).
func (s *processSlot) hold(p *clientProcess, under func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if under != nil {
		under()
	}
	s.cur = p
}

// wait waits for p, whose stdout was read to its end, to exit and frees
// the slot. It returns when a fault killed p (0: it died by itself).
func (s *processSlot) wait(p *clientProcess) (killedAt int64) {
	_ = p.cmd.Wait()
	close(p.exited)
	s.mu.Lock()
	if s.cur == p {
		s.cur = nil
	}
	s.mu.Unlock()
	return p.killedAt.Load()
}

func (s *processSlot) current() *clientProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Pause stops the slot's process (SIGSTOP): its heartbeats and renewals
// stop with it, as in a GC pause. The pause is noted before the signal,
// so the stall it makes falls inside it. It returns once the process is
// stopped and what it sent before has been handled (its last store call
// served, its last event recorded), within pauseDrain.
func (s *processSlot) Pause() error {
	p := s.current()
	if p != nil && s.now != nil {
		p.stopping(s.now())
	}
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	if p != nil {
		p.stoppedAndDrained(pauseDrain)
	}
	return nil
}

// pauseDrain bounds Pause's wait for the stopped process's pipe to drain.
const pauseDrain = 2 * time.Second

// Resume continues the slot's process (SIGCONT).
func (s *processSlot) Resume() error {
	err := s.signal(syscall.SIGCONT)
	if p := s.current(); p != nil && s.now != nil {
		p.resumed(s.now())
	}
	return err
}

// Kill kills the slot's process (SIGKILL) and returns when it is gone; the
// fleet records the crash and starts a replacement.
func (s *processSlot) Kill() error {
	p := s.current()
	if p == nil {
		return fmt.Errorf("client %d has no running process", s.index)
	}
	// The crash happens now, not when the fleet notices the exit: the
	// server may free the lock (a dropped connection) and grant it to
	// someone else in between, and the history must not show the crashed
	// holder still holding then.
	if s.now != nil {
		p.killedAt.Store(s.now())
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill client %d: %w", s.index, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill client %d: still running after 10s", s.index)
	}
}

func (s *processSlot) signal(sig syscall.Signal) error {
	p := s.current()
	if p == nil {
		return fmt.Errorf("client %d has no running process", s.index)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal client %d: %w", s.index, err)
	}
	return nil
}

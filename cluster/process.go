package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawner starts every server process from one goroutine locked to its OS
// thread. Pdeathsig fires when the *thread* that forked the child dies, so
// pinning the forks to a thread that lives exactly as long as the cluster
// means the servers die with locklab, also when locklab crashes or is killed.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns the thread exits,
		// and the kernel sends SIGKILL to every server it started.
		close(ready)
		for {
			select {
			case r := <-s.reqs:
				r.reply <- r.cmd.Start()
			case <-s.done:
				return
			}
		}
	}()
	<-ready
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, reply: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.done:
		return errors.New("cluster is closed")
	}
	return <-r.reply
}

func (s *spawner) close() { close(s.done) }

// process is one server process that can be paused, killed and restarted
// with the same command line (same port, same data dir).
type process struct {
	name    string
	argv    []string
	env     []string
	dir     string
	logPath string
	spawn   *spawner
	uid     int // run as this user when > 0 (PostgreSQL refuses root)
	gid     int
	// stopSig asks for an orderly shutdown; default SIGTERM. PostgreSQL
	// takes SIGTERM as "wait for clients to leave", SIGINT as "now".
	stopSig syscall.Signal

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // exit status of the last run
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s is already running", p.name)
		}
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", p.name, err)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig: syscall.SIGKILL,
		// Own process group: a Ctrl-C at the terminal reaches locklab
		// only, which then stops the servers in order.
		Setpgid: true,
	}
	if p.uid > 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}
	}
	if err := p.spawn.start(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// running reports whether the process is alive, and a channel closed at exit.
func (p *process) running() (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false, nil
	}
	select {
	case <-p.exited:
		return false, p.exited
	default:
		return true, p.exited
	}
}

func (p *process) signal(sig syscall.Signal) error {
	alive, _ := p.running()
	if !alive {
		return fmt.Errorf("%s is not running", p.name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	return nil
}

// stop ends the process: SIGTERM (after SIGCONT, in case it is paused), then
// SIGKILL if it has not exited within grace.
func (p *process) stop(grace time.Duration) {
	alive, exited := p.running()
	if !alive {
		return
	}
	p.mu.Lock()
	proc := p.cmd.Process
	p.mu.Unlock()
	_ = proc.Signal(syscall.SIGCONT)
	if grace > 0 {
		sig := p.stopSig
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		_ = proc.Signal(sig)
		select {
		case <-exited:
			return
		case <-time.After(grace):
		}
	}
	_ = proc.Signal(syscall.SIGKILL)
	<-exited
}

// logTail returns the last lines of the process log, for error messages.
func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

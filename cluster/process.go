package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/internal/procstat"
	"github.com/locklab/locklab/spawn"
)

// process is one server process that can be paused, killed and restarted
// with the same command line (same port, same data dir).
type process struct {
	name    string
	argv    []string
	env     []string
	dir     string
	logPath string
	spawn   *spawn.Spawner
	uid     int // run as this user when > 0 (PostgreSQL refuses root)
	gid     int
	// stopSig asks for an orderly shutdown; default SIGTERM. PostgreSQL
	// takes SIGTERM as "wait for clients to leave", SIGINT as "now".
	stopSig syscall.Signal
	// ports are the ports the server listens on, held while it is killed
	// (see portHold).
	ports []int
	held  *portHold

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
	if p.uid > 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}}
	}
	// With Pdeathsig, in its own process group (spawn.Spawner.Start).
	if err := p.spawn.Start(cmd); err != nil {
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

// signal sends sig to the whole server: its process group (servers run in
// their own). PostgreSQL is a postmaster and its backends, Redis forks for
// background saves: a pause or a kill of the leader alone would leave
// backends serving their connections and holding their locks.
func (p *process) signal(sig syscall.Signal) error {
	alive, _ := p.running()
	if !alive {
		return fmt.Errorf("%s is not running", p.name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pids, err := signalServer(p.cmd.Process.Pid, sig)
	if err != nil {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	if sig == syscall.SIGSTOP {
		// kill(2) only queues the stop: a thread already running goes on
		// for a moment. A pause is in force once every thread is stopped.
		if err := allStopped(pids, 2*time.Second); err != nil {
			return fmt.Errorf("pause %s: %w", p.name, err)
		}
	}
	return nil
}

// allStopped waits until every thread of pids is stopped (or the process
// is gone), or limit passes.
func allStopped(pids []int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		running := 0
		for _, pid := range pids {
			tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
			for _, task := range tasks {
				tid, err := strconv.Atoi(task.Name())
				if err != nil {
					continue
				}
				if st, err := procstat.Read(tid); err == nil && !st.Stopped() && !st.Zombie() {
					running++
				}
			}
		}
		if running == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d threads still running %v after SIGSTOP", running, limit)
		}
		time.Sleep(time.Millisecond)
	}
}

// signalServer sends sig to a server's process group and to every process
// descended from its leader: PostgreSQL makes each backend the leader of a
// group of its own (setsid in InitPostmasterChild), so the group alone
// does not reach them. It returns the processes signalled, to wait for.
func signalServer(leader int, sig syscall.Signal) ([]int, error) {
	pids := append([]int{leader}, spawn.Descendants(leader)...)
	err := syscall.Kill(-leader, sig)
	for _, pid := range pids[1:] {
		_ = syscall.Kill(pid, sig)
	}
	if errors.Is(err, syscall.ESRCH) {
		err = syscall.Kill(leader, sig)
	}
	return pids, err
}

// allGone waits until none of pids is alive (zombies hold nothing), or
// limit passes.
func allGone(pids []int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		alive := 0
		for _, pid := range pids {
			if st, err := procstat.Read(pid); err == nil && st.State != 'Z' {
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of the server still alive after %v", alive, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupHasLive reports whether a process of group pgid is alive (not a
// zombie), from /proc.
func groupHasLive(pgid int) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, err := procstat.Read(pid); err == nil && st.PGRP == pgid && st.State != 'Z' {
			return true
		}
	}
	return false
}

// stop ends the process: SIGTERM (after SIGCONT, in case it is paused), then
// SIGKILL if it has not exited within grace.
func (p *process) stop(grace time.Duration) {
	alive, exited := p.running()
	if !alive {
		return
	}
	p.mu.Lock()
	leader := p.cmd.Process.Pid
	p.mu.Unlock()
	// Every process of the server, taken before any dies: once the
	// leader is gone its children belong to init and cannot be found.
	pids, _ := signalServer(leader, syscall.SIGCONT)
	if grace > 0 {
		sig := p.stopSig
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		_ = syscall.Kill(leader, sig) // the leader shuts its children down in order
		select {
		case <-exited:
			for _, pid := range pids { // anything it left behind
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			_ = allGone(pids, 5*time.Second)
			return
		case <-time.After(grace):
		}
	}
	more, _ := signalServer(leader, syscall.SIGKILL)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-exited
	_ = allGone(append(pids, more...), 5*time.Second)
}

// logTail returns the last lines of the process log, for error messages.
func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return tailOf(string(b), n)
}

// tailOf is the last n lines of a server's log, after its first error
// when that came earlier: a server that died says why at its first error
// (ZooKeeper's "Exception while listening") and how it left at the end.
// The line after that error comes with it when it is no log record of its
// own: the exception a Java server logs there ("java.net.BindException:
// Address already in use") is the why.
func tailOf(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	first := ""
	if len(lines) > n {
		head := lines[:len(lines)-n]
		for i, l := range head {
			if strings.Contains(l, "ERROR") || strings.Contains(l, "FATAL") {
				first = "first error: " + l
				if i+1 < len(head) && isContinuation(head[i+1]) {
					first += " | " + strings.TrimSpace(head[i+1])
				}
				first += " | ... | "
				break
			}
		}
		lines = lines[len(lines)-n:]
	}
	return first + strings.Join(lines, " | ")
}

// isContinuation says whether a log line goes on the record before it: a
// Java exception ("java.net.BindException: ...", "Caused by: ...") or an
// indented stack frame.
func isContinuation(l string) bool {
	if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "Caused by: ") {
		return strings.TrimSpace(l) != ""
	}
	name, _, ok := strings.Cut(l, ":")
	return ok && !strings.ContainsAny(name, " {") && (strings.HasSuffix(name, "Exception") || strings.HasSuffix(name, "Error"))
}

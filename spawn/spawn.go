// Package spawn starts child processes that die with locklab.
package spawn

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
)

// Spawner starts processes from one goroutine locked to its OS thread,
// with Pdeathsig. Pdeathsig fires when the *thread* that forked the child
// dies, so pinning the forks to a thread that lives exactly as long as the
// Spawner means the children die with locklab, also when locklab crashes
// or is killed. The servers of a cluster and the workers of a run are
// started this way.
type Spawner struct {
	reqs chan req
	done chan struct{}
}

type req struct {
	cmd   *exec.Cmd
	reply chan error
}

// New starts the spawning thread.
func New() *Spawner {
	s := &Spawner{reqs: make(chan req), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns the thread exits,
		// and the kernel sends SIGKILL to every process it started.
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

// Start starts cmd with Pdeathsig, in its own process group (a Ctrl-C at
// the terminal reaches locklab only, which then stops its children in
// order). Other SysProcAttr fields of cmd are kept.
func (s *Spawner) Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	r := req{cmd: cmd, reply: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.done:
		return errors.New("spawner is closed")
	}
	return <-r.reply
}

// Close ends the spawning thread: every process it started is killed.
func (s *Spawner) Close() { close(s.done) }

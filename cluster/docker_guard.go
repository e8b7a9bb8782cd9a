package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// guard removes a Docker session's containers and network once locklab is
// gone, however it ended: it is a shell that reads a pipe only locklab
// holds open, so the pipe's end (Close, a crash, SIGKILL) is its signal.
// It runs in a process group of its own, ignoring the terminal's signals,
// so a Ctrl-C at locklab does not take it down before it did its job.
// This is what testcontainers' Ryuk container does, without an image.
type guard struct {
	cmd  *exec.Cmd
	pipe io.WriteCloser
	done chan struct{}
}

func (d *dockerSession) startGuard() error {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return errors.New("--cluster docker: the docker command is not installed; locklab uses it to remove its containers should it be killed")
	}
	script := fmt.Sprintf(`trap '' INT TERM HUP QUIT
cat >/dev/null
ids=$(%[1]s ps -aq --filter label=%[2]s=%[3]s)
[ -z "$ids" ] || %[1]s rm -f -v $ids >/dev/null 2>&1
%[1]s network rm locklab-%[3]s >/dev/null 2>&1
exit 0`, docker, labelSession, d.id)
	cmd := exec.Command("sh", "-c", script)
	// The engine the containers are on, which need not be the one the
	// docker command would pick by itself (cluster/docker's client also
	// reads ~/.testcontainers.properties and the Docker context): an engine
	// elsewhere is cleaned up as this machine's is.
	cmd.Env = append(withoutEnv(os.Environ(), "DOCKER_HOST", "DOCKER_CONTEXT"), "DOCKER_HOST="+d.engine.URL)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("docker guard: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("docker guard: %w", err)
	}
	g := &guard{cmd: cmd, pipe: pipe, done: make(chan struct{})}
	go func() { cmd.Wait(); close(g.done) }()
	d.guard = g
	return nil
}

// withoutEnv is env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// release ends the guard after a clean Close (nothing left for it to
// remove, so it is quick) and waits a little for it.
func (g *guard) release() {
	g.pipe.Close()
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
	}
}

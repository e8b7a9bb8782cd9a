package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A verdict is always printed; a file asked for beside it that cannot be
// written makes the exit non-zero (and a violation still exits 1).
func TestCheckUnwritableOutputs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		history string
		args    []string
		code    int
	}{
		{"clean history, unwritable timeline", "ok-lost-replies.jsonl", []string{"--timeline", "/nonexistent/t.png"}, exitInfra},
		{"clean history, unwritable html", "ok-lost-replies.jsonl", []string{"--html", "/proc/nope"}, exitOK}, // nothing to draw
		{"violation, unwritable html", "double-grant-outlived.jsonl", []string{"--html", "/proc/nope"}, exitUnsafe},
		{"empty of lock operations", "", nil, exitUsage},
		// Time running backwards is broken input, not a double grant.
		{"ok before its invoke", "backwards", nil, exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("..", "..", "checker", "testdata", tt.history)
			switch tt.history {
			case "":
				path = writeFile(t, t.TempDir(), "empty.jsonl", `{"proc":0,"type":"invoke","f":"read","t":1}
{"proc":0,"type":"ok","f":"read","t":2}`)
			case "backwards":
				path = writeFile(t, t.TempDir(), "backwards.jsonl", `{"proc":1,"type":"invoke","f":"acquire","key":"k","t":10}
{"proc":1,"type":"ok","f":"acquire","key":"k","t":20}
{"proc":2,"type":"invoke","f":"acquire","key":"k","t":30}
{"proc":2,"type":"ok","f":"acquire","key":"k","t":25}`)
			}
			cmd := exec.Command(binary, append([]string{"check", path}, tt.args...)...)
			out, _ := cmd.CombinedOutput()
			if got := cmd.ProcessState.ExitCode(); got != tt.code {
				t.Fatalf("exit %d, want %d\n%s", got, tt.code, out)
			}
			if tt.history == "backwards" && !strings.Contains(string(out), "event 4: ok acquire of process 2 at t=25, before its invoke at t=30") {
				t.Fatalf("no line naming the event:\n%s", out)
			}
			if tt.history != "" && tt.history != "backwards" && !strings.Contains(string(out), "verdict:") {
				t.Fatalf("no verdict printed:\n%s", out)
			}
		})
	}
}

// A command whose input is a FIFO nobody writes to (open blocks) still
// stops at SIGTERM or SIGINT, with the interrupted exit code: check reading
// a history, and bench reading its --config.
func TestBlockedInputStopsOnSignal(t *testing.T) {
	tests := []struct {
		name string
		args func(fifo string) []string
		sig  syscall.Signal
	}{
		{"check SIGTERM", func(f string) []string { return []string{"check", f} }, syscall.SIGTERM},
		{"check SIGINT", func(f string) []string { return []string{"check", f} }, syscall.SIGINT},
		{"bench config SIGTERM", func(f string) []string {
			return []string{"bench", "--cluster", "external", "--config", f, "--results", filepath.Join(filepath.Dir(f), "results")}
		}, syscall.SIGTERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "input.fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binary, tt.args(fifo)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitBlockedOnFIFO(t, cmd.Process.Pid)
			cmd.Process.Signal(tt.sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
				if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
					t.Fatalf("exit %d, want %d", code, exitInterrupted)
				}
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("blocked on a FIFO, %v did not stop it", tt.sig)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(fifo), "results")); !os.IsNotExist(err) {
				t.Errorf("a results folder was created (stat: %v)", err)
			}
		})
	}
}

// waitBlockedOnFIFO waits until a thread of process pid sleeps in open(2)
// of a FIFO waiting for a writer (the kernel's wait_for_partner): only then
// is the signal a test of blocked input, not of a process still starting
// (on a busy machine a fixed 300 ms was not always enough, and the signal
// then killed it before its handler was installed).
func waitBlockedOnFIFO(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		chans, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
		for _, c := range chans {
			if b, err := os.ReadFile(c); err == nil && string(b) == "wait_for_partner" {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d never blocked opening its FIFO", pid)
}

// A history saved by an editor that writes a UTF-8 byte order mark is
// read like any other.
func TestCheckAcceptsByteOrderMark(t *testing.T) {
	path := writeFile(t, t.TempDir(), "bom.jsonl", "\xef\xbb\xbf"+`{"proc":1,"type":"invoke","f":"acquire","key":"k","t":1}
{"proc":1,"type":"ok","f":"acquire","key":"k","t":2}`)
	out, err := exec.Command(binary, "check", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verdict: OK") {
		t.Fatalf("%v\n%s", err, out)
	}
}

package procstat

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Stat
		err        bool
	}{
		{"plain", "1234 (redis-server) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 5 0 100 0 0",
			Stat{State: 'S', PPID: 1, PGRP: 1234, CPU: 3 * time.Second}, false},
		{"spaces and parentheses in the name", "77 (a (b) c) T 9 70 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0",
			Stat{State: 'T', PPID: 9, PGRP: 70, CPU: 100 * time.Millisecond}, false},
		{"cut short", "77 (x) R 1 77", Stat{}, true},
		{"no name", "77 x R", Stat{}, true},
		{"not a number", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 a 5 0", Stat{}, true},
		{"no state letter", "1 (x) SS 1 1 1 0 -1 0 0 0 0 0 1 5 0", Stat{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.line))
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Parse = %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// A child read from /proc: its parent is this process, it shows stopped
// after SIGSTOP and not after SIGCONT, and a process that is gone is an
// error.
func TestReadChild(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, err := Read(pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != os.Getpid() || st.Stopped() || st.Zombie() {
		t.Fatalf("child %+v: want parent %d, running", st, os.Getpid())
	}
	waitFor := func(stopped bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if st, err := Read(pid); err == nil && st.Stopped() == stopped {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("child never showed stopped=%v", stopped)
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(true)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(false)
	if _, err := Read(-1); err == nil {
		t.Fatal("Read(-1): no error")
	}
}

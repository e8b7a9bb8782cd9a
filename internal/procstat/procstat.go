// Package procstat reads a process's (or a thread's) line of /proc: its
// state, parent, group and CPU time. Locklab reads it to tell a stopped
// server from a running one, to find what a program started, and to put
// each side's CPU beside a bench's throughput.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Stat is what locklab reads of a /proc stat line.
type Stat struct {
	State byte // R, S, D, T (stopped), t (traced), Z (zombie), X...
	PPID  int
	PGRP  int
	CPU   time.Duration // user and system time used so far
}

// Stopped reports a process stopped by a signal (or by a tracer).
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }

// Zombie reports a process that exited and was not yet waited for (or is
// being torn down).
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// clockTicks is the kernel's USER_HZ, the unit of the stat line's times:
// 100 on every Linux architecture Go runs on.
const clockTicks = 100

// Read reads process pid's stat line.
func Read(pid int) (Stat, error) {
	return ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
}

// ReadFile reads a stat line from path: a process's /proc/PID/stat or a
// thread's /proc/PID/task/TID/stat.
func ReadFile(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Parse reads a stat line: "pid (comm) state ppid pgrp ... utime stime
// ...". The command name may hold spaces and parentheses, so the fields
// are counted after its last closing parenthesis: state is the 3rd field,
// utime and stime the 14th and 15th.
func Parse(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return Stat{}, fmt.Errorf("/proc stat: %d fields after the name, want 13 or more", len(f))
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("/proc stat: state %q", f[0])
	}
	n := make([]int64, 0, 4)
	for _, s := range [][]byte{f[1], f[2], f[11], f[12]} {
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("/proc stat: %w", err)
		}
		n = append(n, v)
	}
	return Stat{State: f[0][0], PPID: int(n[0]), PGRP: int(n[1]),
		CPU: time.Duration(n[2]+n[3]) * time.Second / clockTicks}, nil
}

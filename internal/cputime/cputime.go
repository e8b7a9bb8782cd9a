// Package cputime reads how much CPU a process has used: locklab's own
// and a server's, so a bench can put each side's cost beside its
// throughput.
package cputime

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Self is the CPU (user and system) this process has used so far.
func Self() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times:
// 100 on every Linux architecture Go runs on.
const clockTicks = 100

// Process is the CPU (user and system) process pid has used so far, from
// /proc/PID/stat.
func Process(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStat(b)
}

// parseStat reads utime and stime, the 14th and 15th fields; the command
// name (the 2nd, in parentheses) may hold spaces, so fields are counted
// after its closing parenthesis.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	// After the name: state is field 3, so utime (14) is f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// Processes sums Process over pids, skipping those gone (a server
// restarted by a fault has a new pid; what the old one used is lost).
func Processes(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if d, err := Process(pid); err == nil {
			sum += d
		}
	}
	return sum
}

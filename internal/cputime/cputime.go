// Package cputime reads how much CPU a process has used: locklab's own
// and a server's, so a bench can put each side's cost beside its
// throughput.
package cputime

import (
	"fmt"
	"syscall"
	"time"

	"github.com/locklab/locklab/internal/procstat"
)

// Self is the CPU (user and system) this process has used so far.
func Self() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// Process is the CPU (user and system) process pid has used so far, from
// /proc/PID/stat.
func Process(pid int) (time.Duration, error) {
	st, err := procstat.Read(pid)
	return st.CPU, err
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

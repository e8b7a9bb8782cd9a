package stall

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Runqueue watches processes locklab runs but cannot put a probe in (the
// servers) for the standstill the machine imposes on them: a thread that
// was ready to run and waited that long for a CPU. A server stopped on
// purpose (SIGSTOP) is not ready to run, so a server pause is no stall.
//
// The kernel counts a thread's wait on the run queue (the second field of
// /proc/PID/task/TID/schedstat) when the wait ends, as the thread gets the
// CPU: a wait that ended since the last look ended within a period of
// now, so each is reported as the span of its length ending now.
type Runqueue struct {
	Period    time.Duration // how often the processes are read; default DefaultServerPeriod
	Threshold time.Duration // how long a wait must be to be a stall; default DefaultThreshold
}

// DefaultServerPeriod: a look reads a file per thread (a ZooKeeper JVM has
// about forty), and a wait's length does not depend on how often it is
// read, only where its span ends.
const DefaultServerPeriod = 50 * time.Millisecond

// Run reads the threads of procs() every period until ctx ends, and
// reports each stall as its process's name and span. procs names each
// watched process and its pids (a server and the processes under it);
// it is called on every look, since a restarted server has a new pid.
func (q Runqueue) Run(ctx context.Context, now func() int64, procs func() map[string][]int, report func(who string, s Span)) {
	if q.Period <= 0 {
		q.Period = DefaultServerPeriod
	}
	if q.Threshold <= 0 {
		q.Threshold = DefaultThreshold
	}
	prev := map[int]uint64{} // tid -> its run-queue wait so far, ns
	t := time.NewTicker(q.Period)
	defer t.Stop()
	for {
		at := now()
		cur := map[int]uint64{}
		for who, pids := range procs() {
			waits := map[int]uint64{}
			for _, pid := range pids {
				threadWaits(pid, waits)
			}
			if s, ok := longestWait(prev, waits, at, q.Threshold); ok {
				report(who, s)
			}
			for tid, w := range waits {
				cur[tid] = w
			}
		}
		prev = cur
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// longestWait is the longest wait of a thread that ended between the
// looks prev and cur (at now), as a span ending now, if it lasted at least
// threshold. A thread first seen in cur says nothing: its count may hold
// waits from before the watch.
func longestWait(prev, cur map[int]uint64, now int64, threshold time.Duration) (Span, bool) {
	var longest uint64
	for tid, w := range cur {
		if p, seen := prev[tid]; seen && w > p {
			longest = max(longest, w-p)
		}
	}
	if longest == 0 || time.Duration(longest) < threshold {
		return Span{}, false
	}
	return Span{Start: now - int64(longest), End: now}, true
}

// threadWaits adds each thread of pid and its run-queue wait to waits. A
// process or thread gone meanwhile is left out.
func threadWaits(pid int, waits map[int]uint64) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if w, ok := parseSchedstat(b); ok {
			waits[tid] = w
		}
	}
}

// parseSchedstat reads the run-queue wait, the second of schedstat's three
// fields: time on the CPU, time waiting for it, timeslices run.
func parseSchedstat(b []byte) (uint64, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	w, err := strconv.ParseUint(string(f[1]), 10, 64)
	return w, err == nil
}

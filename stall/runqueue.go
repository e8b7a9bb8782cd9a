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
	// ListEvery is how often procs is called again (a listing reads /proc
	// whole, to find the processes under a server); 0: on every look.
	ListEvery time.Duration
}

// DefaultServerPeriod: a look reads a file per thread (a ZooKeeper JVM has
// about forty), and a wait's length does not depend on how often it is
// read, only where its span ends.
const DefaultServerPeriod = 50 * time.Millisecond

// Run reads the threads of procs() every period until ctx ends, and
// reports each stall as its process's name and span. procs names each
// watched process and its pids (a server and the processes under it);
// it is called again every ListEvery, since a restarted server has a new
// pid.
func (q Runqueue) Run(ctx context.Context, now func() int64, procs func() map[string][]int, report func(who string, s Span)) {
	if q.Period <= 0 {
		q.Period = DefaultServerPeriod
	}
	if q.Threshold <= 0 {
		q.Threshold = DefaultThreshold
	}
	prev := map[int]sched{} // tid -> its counts so far
	var prevAt int64
	asleep := map[int]int64{} // tid -> the last look that saw it asleep
	t := time.NewTicker(q.Period)
	defer t.Stop()
	var listed map[string][]int
	var listedAt time.Time
	for {
		at := now()
		if listed == nil || time.Since(listedAt) >= q.ListEvery {
			listed, listedAt = procs(), time.Now()
			if listed == nil {
				listed = map[string][]int{}
			}
		}
		cur := map[int]sched{}
		for who, pids := range listed {
			waits := map[int]sched{}
			for _, pid := range pids {
				threadWaits(pid, waits)
			}
			if s, ok := longestWait(prev, waits, asleep, time.Duration(at-prevAt), at, q.Threshold); ok {
				report(who, s)
			}
			for tid, w := range waits {
				cur[tid] = w
			}
		}
		// The threads still there, each with the last look that saw it
		// asleep, this one or an earlier.
		seen := map[int]int64{}
		for tid, c := range cur {
			if c.asleep {
				seen[tid] = at
			} else if t, ok := asleep[tid]; ok {
				seen[tid] = t
			}
		}
		prev, prevAt, asleep = cur, at, seen
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sched is a thread's schedstat counts: its run-queue wait so far (ns)
// and the timeslices it has run; and whether it was asleep (or stopped)
// when read.
type sched struct {
	wait, slices uint64
	asleep       bool
}

// longestWait is the longest wait of a thread that ended between the
// looks prev and cur, since apart (cur at now), as a span ending now, if
// it lasted at least threshold. A thread first seen in cur says nothing:
// its count may hold waits from before the watch.
//
// The count grows by every wait that ended in between. One timeslice run
// since the last look is one wait: the growth is its length. More are
// several waits, each but the longest wholly inside the interval, so the
// longest is at least the growth less the interval (and at least its
// share of the growth): when the looks are far apart (the watch itself
// held up), a busy thread's many short waits on a loaded machine add up to
// seconds that are no stall (a ZooKeeper thread's 18.6 s).
//
// A wait began after the last look that saw the thread asleep (asleep:
// tid -> that look's time): the kernel (6.18 here, with EEVDF's delayed
// dequeue) counts some sleeps as run-queue waits. Sampled beside a loaded
// ZooKeeper, single waits of 1.006 s, 2.999 s and 3.004 s, each the length
// of a timed wait of the JVM's, were threads asleep, not starved.
func longestWait(prev, cur map[int]sched, asleep map[int]int64, since time.Duration, now int64, threshold time.Duration) (Span, bool) {
	var longest uint64
	for tid, c := range cur {
		p, seen := prev[tid]
		if !seen || c.wait <= p.wait {
			continue
		}
		grew, n := c.wait-p.wait, c.slices-p.slices
		if c.slices > p.slices && n > 1 {
			grew = max(grew/n, grew-min(grew, uint64(max(since, 0))))
		}
		if at, ok := asleep[tid]; ok && at < now && uint64(now-at) < grew {
			grew = uint64(now - at)
		}
		longest = max(longest, grew)
	}
	if longest == 0 || time.Duration(longest) < threshold {
		return Span{}, false
	}
	return Span{Start: now - int64(longest), End: now}, true
}

// threadWaits adds each thread of pid and its counts to waits. A process
// or thread gone meanwhile is left out.
func threadWaits(pid int, waits map[int]sched) {
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
		w, ok := parseSchedstat(b)
		if !ok {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat")); err == nil {
			w.asleep = asleepIn(st)
		}
		waits[tid] = w
	}
}

// asleepIn says whether a thread's /proc stat line shows it not runnable:
// its state, after the command's closing parenthesis, is not R.
func asleepIn(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(stat[i+1:])
	return len(f) > 0 && f[0][0] != 'R'
}

// parseSchedstat reads the run-queue wait and the timeslices run, the
// second and third of schedstat's three fields (the first is the time on
// the CPU).
func parseSchedstat(b []byte) (sched, bool) {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return sched{}, false
	}
	w, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return sched{}, false
	}
	n, err := strconv.ParseUint(string(f[2]), 10, 64)
	return sched{wait: w, slices: n}, err == nil
}

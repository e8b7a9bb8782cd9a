package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// children are the running processes whose parent is this one and whose
// first argument is arg.
func children(arg string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		st, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])) // after the command's name
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == arg {
			n, _ := strconv.Atoi(filepath.Base(p))
			out = append(out, n)
		}
	}
	return out
}

// A client pause is that fault, not a stall of the lab: the paused
// worker's probe wakes 1.5 s late, and none of it is recorded as a stall
// (an expected-safe case's verdict under it stands). The same worker
// stopped from outside (no fault) for as long is a stall: the probe was
// there to see the pause.
func TestClientPauseIsNotALabStall(t *testing.T) {
	spec := workload.Spec{Clients: 2, Hold: workload.Dist{Kind: "fixed", A: 5 * time.Millisecond},
		TTL: 10 * time.Second, Duration: 7 * time.Second, Seed: 1}
	c := faultCase(t, "redis-setnx-px-lua", spec,
		step(t, "client-pause", chaos.Selector{Client: "0"}, time.Second, 1500*time.Millisecond, nil))
	c.Expect = verdict.Expect("test", verdict.Safe)
	// From outside, 4 s after the workers appear (the case starts once
	// they connected, so after the fault's heal at 2.5 s), a stop of 1.5 s.
	type stop struct{ from, stopped, to int64 }
	stopped := make(chan stop, 1)
	clk := clock.NewMonotonic()
	// This case's workers are those that were not there before it: a
	// worker of an earlier test still exiting is not one of them (CI
	// stopped one such, and this case's probes had nothing to report).
	before := children(workerArg)
	if len(before) > 0 {
		t.Logf("workers of earlier cases still running: %v", before)
	}
	ours := func() []int {
		var out []int
		for _, w := range children(workerArg) {
			if !slices.Contains(before, w) {
				out = append(out, w)
			}
		}
		return out
	}
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for len(ours()) < 2 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(4 * time.Second)
		ws := ours()
		if len(ws) == 0 {
			stopped <- stop{}
			return
		}
		from := clk.Nanos()
		syscall.Kill(ws[0], syscall.SIGSTOP)
		at := clk.Nanos()
		time.Sleep(1500 * time.Millisecond)
		to := clk.Nanos()
		syscall.Kill(ws[0], syscall.SIGCONT)
		stopped <- stop{from, at, to}
	}()
	out, evs := runFaultCase(t, c)
	ext := <-stopped
	if ext.from == 0 {
		t.Fatal("no worker process to stop from outside")
	}
	var pause history.Window
	for _, w := range history.FaultWindows(evs) {
		if w.Fault == "client-pause" {
			pause = w
		}
	}
	if pause.Start == 0 || pause.End == 0 || time.Duration(pause.End-pause.Start) < 1400*time.Millisecond {
		t.Fatalf("no client pause of 1.5 s in the history: %+v", pause)
	}
	if ext.from < pause.End {
		t.Fatalf("the stop from outside began before the pause's heal: the case started late")
	}
	labStalled := false
	var outside []string
	for _, ev := range evs {
		who, start, end, ok := history.ReadStall(ev)
		if !ok {
			continue
		}
		d := time.Duration(end - start)
		// The order of events decides, not how long a loaded machine kept
		// a probe from waking: a stall recorded for the pause would span
		// it; the stop from outside, the probe cannot run through it.
		switch {
		case strings.HasPrefix(who, "worker ") && start <= pause.Start && end >= pause.End:
			t.Errorf("%s stalled %v through the client pause (%v): the pause was reported as a stall of the lab", who, d, time.Duration(pause.End-pause.Start))
		case strings.HasPrefix(who, "worker ") && start <= ext.stopped+int64(50*time.Millisecond) && end >= ext.to:
			outside = append(outside, who)
		case who == "locklab" && start < pause.End && end > pause.Start:
			labStalled = true // the test's own process stalled: a loaded machine
		}
	}
	if len(outside) != 1 {
		t.Errorf("the stop from outside was recorded %d times (%v), want once", len(outside), outside)
	}
	if v := out.Verdicts[0]; v.LabStalled && !labStalled {
		t.Errorf("the verdict reads the client pause as a stall of the lab: %s", v.Text)
	}
}

// leaseOf: an instant fault is judged over the TTL, or the session that
// frees a crashed holder's lock, or, for a lock nothing frees, the rest of
// the run.
func TestLeaseOf(t *testing.T) {
	run := verdict.Span{Start: int64(time.Second), End: int64(9 * time.Second)}
	for _, tc := range []struct {
		name string
		a    impls.Approach
		want time.Duration
	}{
		{"a TTL", impls.Approach{Caps: impls.Capabilities{TTL: true}}, 2 * time.Second},
		{"a session longer than the TTL", impls.Approach{Caps: impls.Capabilities{TTL: true}, CrashFreedAfter: 3 * time.Second}, 3 * time.Second},
		{"freed with its connection", impls.Approach{}, 0},
		{"never freed", impls.Approach{Weak: impls.Weaknesses{NoExpiry: true}}, 8 * time.Second},
	} {
		if got := time.Duration(leaseOf(tc.a, 2*time.Second, run)); got != tc.want {
			t.Errorf("%s: lease %v, want %v", tc.name, got, tc.want)
		}
	}
}

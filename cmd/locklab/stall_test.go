package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/internal/procstat"
	"github.com/locklab/locklab/internal/starve"
)

// monoNow reads CLOCK_MONOTONIC, the clock of a history's events.
func monoNow(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

type recordedStall struct {
	who        string
	start, end int64
}

// historyBytes reads a run's history as JSONL, decompressed, up to its
// last flush when the run still writes it.
func historyBytes(t *testing.T, path string) []byte {
	t.Helper()
	f, err := history.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// stallsIn reads the stall events of a history file, which may still be
// written: its last line may be cut short.
func stallsIn(t *testing.T, path string) []recordedStall {
	t.Helper()
	b := historyBytes(t, path)
	var out []recordedStall
	for _, line := range bytes.Split(b[:bytes.LastIndexByte(b, '\n')+1], []byte("\n")) {
		var ev history.Event
		if len(line) == 0 || !bytes.Contains(line, []byte(`"f":"stall"`)) {
			continue
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("%s: %v: %s", path, err, line)
		}
		if who, start, end, ok := history.ReadStall(ev); ok {
			out = append(out, recordedStall{who, start, end})
		}
	}
	return out
}

// startRunning starts cmd, which writes its results under results, and
// returns once its case is running (a grant is in its history): the
// history's path, and what cmd prints. The wait for a grant counts from
// when cmd says its servers are ready: a Docker cluster took 47 s to be
// ready on a loaded CI machine. The test kills cmd when it ends.
func startRunning(t *testing.T, cmd *exec.Cmd, results string) (string, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	const grantWithin = 60 * time.Second
	var ready time.Time
	for started := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if ready.IsZero() && strings.Contains(out.String(), "cluster ready in ") {
			ready = time.Now()
		}
		if hs, _ := filepath.Glob(filepath.Join(results, "*", history.FileName)); len(hs) == 1 {
			if b := historyBytes(t, hs[0]); bytes.Contains(b, []byte(`"type":"ok","f":"acquire"`)) {
				return hs[0], out
			}
		}
		switch {
		case ready.IsZero() && time.Since(started) > serversReadyWithin:
			cmd.Process.Kill()
			t.Fatalf("servers not ready within %v\n%s", serversReadyWithin, out)
		case !ready.IsZero() && time.Since(ready) > grantWithin:
			cmd.Process.Kill()
			t.Fatalf("no grant recorded within %v of the servers being ready\n%s", grantWithin, out)
		}
	}
}

// serversReadyWithin bounds a start of servers the process under test did
// not give up on itself.
const serversReadyWithin = 5 * time.Minute

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stop is when a process was stopped from outside and let go, on the
// history's clock: each bracketed by readings before and after the act.
type stop struct {
	stopping, stopped, resuming, resumed int64
}

// stopFor stops pid (SIGSTOP) for d from outside. The stop counts from
// when every thread of pid is seen stopped, not from the kill: each
// thread stops as it next enters the kernel, and beside two busy loops
// locklab's probe ran once more after the kill had returned (a stall of
// 1.43 s recorded for a stop of 1.5 s).
func stopFor(t *testing.T, pid int, d time.Duration) stop {
	t.Helper()
	return stopWith(t, d, func() error {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return err
		}
		return allThreadsStopped(pid, 10*time.Second)
	}, func() error { return syscall.Kill(pid, syscall.SIGCONT) })
}

// allThreadsStopped waits until every thread of pid shows state T (stopped)
// in /proc, at most within.
func allThreadsStopped(pid int, within time.Duration) error {
	for deadline := time.Now().Add(within); ; time.Sleep(time.Millisecond) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return fmt.Errorf("threads of %d: %v", pid, err)
		}
		stopped := true
		for _, task := range tasks {
			st, err := procstat.ReadFile(task)
			if err != nil {
				continue // the thread ended
			}
			if !st.Stopped() {
				stopped = false
				break
			}
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d: not every thread stopped %v after SIGSTOP", pid, within)
		}
	}
}

// stopWith stops something with pause, and resume it d after.
func stopWith(t *testing.T, d time.Duration, pause, resume func() error) stop {
	t.Helper()
	var s stop
	s.stopping = monoNow(t)
	if err := pause(); err != nil {
		t.Fatal(err)
	}
	s.stopped = monoNow(t)
	time.Sleep(d)
	s.resuming = monoNow(t)
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	s.resumed = monoNow(t)
	return s
}

// stalledThen finds the stall of who (a prefix: "worker ") that covers
// the stop: the probe cannot run from when the stop took effect to when
// it was let go, so its stall begins no later than the first and ends no
// earlier than the second, however loaded the machine (which may make it
// longer, never shorter).
func stalledThen(t *testing.T, stalls []recordedStall, who string, st stop) recordedStall {
	t.Helper()
	if s, ok := covering(stalls, who, st); ok {
		return s
	}
	t.Fatalf("no stall of %q covering the stop (%.3f s to %.3f s after it began) was recorded; stalls: %+v", who,
		seconds(st.stopped-st.stopping), seconds(st.resuming-st.stopping), stalls)
	return recordedStall{}
}

// covering is the stall of who that covers the stop, if one was recorded.
func covering(stalls []recordedStall, who string, st stop) (recordedStall, bool) {
	for _, s := range stalls {
		// 50 ms: the test's clock reading after the stop took effect
		// against the probe's before it.
		if strings.HasPrefix(s.who, who) && s.start <= st.stopped+int64(50*time.Millisecond) && s.end >= st.resuming {
			return s, true
		}
	}
	return recordedStall{}, false
}

func seconds(ns int64) float64 { return time.Duration(ns).Seconds() }

// A SIGSTOP of locklab itself for 1.5 s, from outside, during a bench:
// the history records a stall of locklab covering the stop,
// results.json counts it, and the bench's table shows it beside the
// latencies. An expected-safe case without faults is not made
// inconclusive by it: nothing it decides was in the stall.
func TestSIGSTOPOfLocklabIsAStall(t *testing.T) {
	tmp := enterableTempDir(t)
	results := filepath.Join(tmp, "results")
	cmd := locklab(tmp, "bench", "--approaches", "redis-setnx-px-lua", "--clients", "2", "--duration", "5s", "--results", results)
	hist, out := startRunning(t, cmd, results)
	st := stopFor(t, cmd.Process.Pid, 1500*time.Millisecond)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	s := stalledThen(t, stallsIn(t, hist), "locklab", st)
	_, res := readResults(t, results)
	if len(res.Runs) != 1 {
		t.Fatalf("want one run, got %d", len(res.Runs))
	}
	run := res.Runs[0]
	// The stall the history records (covering the stop, its start up to
	// 50 ms after the test's reading of it) is the one results.json counts.
	if run.StallCount < 1 || run.LongestStall < seconds(s.end-s.start)-0.001 || len(run.Stalls) == 0 || run.LabStalled {
		t.Errorf("results.json: %d stalls, longest %.2f s, listed %+v, lab stalled %v; want the stall of %.2f s counted, the verdict standing",
			run.StallCount, run.LongestStall, run.Stalls, run.LabStalled, seconds(s.end-s.start))
	}
	if res.StallThreshold != 0.1 {
		t.Errorf("results.json: stall threshold %v s, want the default 0.1", res.StallThreshold)
	}
	text := out.String()
	if !strings.Contains(text, "longest stall") || !strings.Contains(text, "the lab stalled") {
		t.Errorf("the bench's output does not show the stall:\n%s", text)
	}
}

// workerPIDs are the `locklab worker` processes whose parent is pid.
func workerPIDs(pid int) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		st, err := procstat.ReadFile(filepath.Join(p, "stat"))
		if err != nil || st.PPID != pid {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == "worker" {
			n, _ := strconv.Atoi(filepath.Base(p))
			out = append(out, n)
		}
	}
	return out
}

// The same for a worker process (clients: {as: processes}) stopped from
// outside: the stall is the worker's, recorded by its own probe.
func TestSIGSTOPOfAWorkerIsAStall(t *testing.T) {
	tmp := enterableTempDir(t)
	results := filepath.Join(tmp, "results")
	scen := filepath.Join(tmp, "workers.yaml")
	if err := os.WriteFile(scen, []byte(`name: workers
approaches: [redis-setnx-px-lua]
workload: {clients: 2, ttl: 10s}
clients: {as: processes}
duration: 5s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := locklab(tmp, "run", "--results", results, scen)
	hist, out := startRunning(t, cmd, results)
	workers := workerPIDs(cmd.Process.Pid)
	if len(workers) != 2 {
		t.Fatalf("want 2 worker processes, found %v", workers)
	}
	st := stopFor(t, workers[0], 1500*time.Millisecond)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	stalls := stallsIn(t, hist)
	ws := stalledThen(t, stalls, "worker ", st)
	// locklab went on while its worker stood still: no stall of its own
	// covers the stop (a loaded machine may stall it briefly meanwhile).
	if s, ok := covering(stalls, "locklab", st); ok {
		t.Errorf("locklab stalled %v, all through the stop of a worker", time.Duration(s.end-s.start))
	}
	_, res := readResults(t, results)
	if len(res.Runs) != 1 || res.Runs[0].StallCount < 1 || res.Runs[0].LongestStall < seconds(ws.end-ws.start)-0.001 {
		t.Errorf("results.json does not count the worker's stall: %+v", res.Runs)
	}
}

// A lab that stood still in the fault window that decides an expected-safe
// case cannot say the lock was safe under the fault: the run reports what
// it saw, but its comparison is "inconclusive: the lab stalled", in words
// and in results.json, and locklab exits 4 (undecided), neither 0 nor 1.
func TestLabStalledInTheFaultWindowIsUndecided(t *testing.T) {
	tmp := enterableTempDir(t)
	results := filepath.Join(tmp, "results")
	scen := filepath.Join(tmp, "slow.yaml")
	if err := os.WriteFile(scen, []byte(`name: slow
approaches: [redis-setnx-px-lua]
workload: {clients: 2, ttl: 10s}
duration: 5s
faults:
  - {fault: slow-replies, target: {node: all}, latency: 1ms, at: 1s, for: 3s}
expect:
  redis-setnx-px-lua: [safe]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := locklab(tmp, "run", "--results", results, scen)
	hist, out := startRunning(t, cmd, results)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b := historyBytes(t, hist); bytes.Contains(b, []byte(`"type":"ok","f":"nemesis","value":{"id":1,"op":"start"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fault never took effect\n%s", out)
		}
	}
	// Two thirds of the 3 s window: a fault that mostly met a lab standing
	// still (a shorter stall leaves the case decided: verdict.LabStalled).
	st := stopFor(t, cmd.Process.Pid, 2*time.Second)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUndecided {
		t.Fatalf("exit %v, want %d (undecided)\n%s", err, exitUndecided, out)
	}
	// The words name the first few stalls, which on a loaded machine may
	// be others (the servers' for 0.13 s, "and 2 more"); the stop is on
	// record as a stall of locklab covering it, and results.json counts
	// it (how far past the SIGCONT it ends is the scheduler's: 3.05 s in
	// all beside two busy loops).
	if !strings.Contains(out.String(), "undecided: inconclusive: the lab stalled (") {
		t.Errorf("the run does not say the lab stalled:\n%s", out)
	}
	ls := stalledThen(t, stallsIn(t, hist), "locklab", st)
	dir, res := readResults(t, results)
	if l := res.Runs[0].LongestStall; l < seconds(ls.end-ls.start)-0.001 {
		t.Errorf("results.json: longest stall %.2f s, shorter than the stop's %.2f s", l, seconds(ls.end-ls.start))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "summary.md")); !bytes.Contains(b, []byte("Inconclusive: the lab itself stalled during the events that decide 1 case(s)")) {
		t.Errorf("summary.md does not say the lab stalled:\n%s", b)
	}
	if r := res.Runs[0]; !r.LabStalled || r.Status != "undecided" || r.StallCount < 1 || r.Missed {
		t.Errorf("results.json: status %q, lab stalled %v, %d stalls, missed %v", r.Status, r.LabStalled, r.StallCount, r.Missed)
	}
	if res.Verdict.Undecided != 1 {
		t.Errorf("results.json verdict: %+v, want one undecided case", res.Verdict)
	}
}

// A server locklab runs that the machine starves (here by a CPU cgroup
// allowing it 1 ms a second) stood still: the run records it as the
// server's stall, read from its threads' waits for a CPU. A run in which
// locklab itself stood still half a second or more is run again (three
// times at most): beside two busy loops locklab stalled 1.4 s over the
// starvation, and the servers' stalls it reads were cut short with it.
func TestStarvedServerIsAStall(t *testing.T) {
	for try := 1; ; try++ {
		longest, own, stalls := starvedServerRun(t)
		if longest >= 400*time.Millisecond {
			return
		}
		if own < 500*time.Millisecond || try == 3 {
			t.Fatalf("a Redis starved for 1 s: its longest stall recorded %v (locklab stood still %v); stalls %+v", longest, own, stalls)
		}
		t.Logf("try %d: longest server stall %v while locklab stood still %v; again", try, longest, own)
	}
}

// starvedServerRun starves the Redis servers of a bench for a second and
// says the longest stall recorded for one of them, how long locklab's own
// stalls lasted together, and every stall.
func starvedServerRun(t *testing.T) (longest, own time.Duration, all []recordedStall) {
	t.Helper()
	tmp := enterableTempDir(t)
	results := filepath.Join(tmp, "results")
	cmd := locklab(tmp, "bench", "--approaches", "redis-setnx-px-lua", "--clients", "2", "--duration", "4s", "--results", results)
	hist, out := startRunning(t, cmd, results)
	var redis []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		comm, _ := os.ReadFile(filepath.Join(p, "comm"))
		if strings.HasPrefix(cwd, tmp) && strings.TrimSpace(string(comm)) == "redis-server" {
			n, _ := strconv.Atoi(filepath.Base(p))
			redis = append(redis, n)
		}
	}
	if len(redis) == 0 {
		t.Fatalf("no redis-server under %s\n%s", tmp, out)
	}
	starve.CPU(t, redis, time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	all = stallsIn(t, hist)
	for _, s := range all {
		d := time.Duration(s.end - s.start)
		switch {
		case strings.HasPrefix(s.who, "server redis"):
			longest = max(longest, d)
		case s.who == "locklab":
			own += d
		}
	}
	return longest, own, all
}

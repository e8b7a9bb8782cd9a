package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workersOf lists running `locklab worker` processes of this test binary.
func workersOf() []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		b, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if !bytes.HasPrefix(b, []byte(binary+"\x00worker")) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(p, "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue
		}
		found = append(found, p)
	}
	return found
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const pauseScenario = `# Holders paused past their TTL, for the signal tests.
name: pause-for-signals
approaches: [redis-setnx-px-lua]
workload: {kind: counter, clients: 3, hold: uniform:10ms-30ms, ttl: 300ms}
clients: {as: processes}
duration: 30s
faults:
  - {fault: client-pause, target: {client: holder, key: "0"}, at: 500ms, every: 1s, for: 600ms}
`

func writeScenario(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Killing locklab during a run, with a client paused, leaves no server and
// no worker process behind: they die with it (Pdeathsig).
func TestRunSIGKILLLeavesNoServerOrWorker(t *testing.T) {
	tmp := t.TempDir()
	cmd := locklab(tmp, "run", writeScenario(t, tmp, pauseScenario), "--results", filepath.Join(tmp, "r"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "3 workers running", 30*time.Second, func() bool { return len(workersOf()) >= 3 })
	time.Sleep(1500 * time.Millisecond) // a pause is in force now and then
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoServers(t, tmp)
	waitFor(t, "no worker left", 10*time.Second, func() bool { return len(workersOf()) == 0 })
}

// Ctrl-C during a run: exit 130, what ran is kept marked incomplete (with
// the faults injected so far), the paused client is resumed and every
// worker and server stops.
func TestRunSIGINTKeepsResultsAndStopsEverything(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "r")
	cmd := locklab(tmp, "run", writeScenario(t, tmp, pauseScenario), "--results", results)
	hist, out := startRunning(t, cmd, results)
	waitFor(t, "3 workers running", 30*time.Second, func() bool { return len(workersOf()) >= 3 })
	// Interrupted once a fault took effect, not after a fixed time: under
	// two busy loops 2 s after the workers started none had (the results
	// kept no fault).
	waitFor(t, "a fault in the history", 30*time.Second, func() bool {
		return bytes.Contains(historyBytes(t, hist), []byte(`"type":"ok","f":"nemesis"`))
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s", err, out.String())
	}
	waitNoServers(t, tmp)
	waitFor(t, "no worker left", 10*time.Second, func() bool { return len(workersOf()) == 0 })
	_, res := readResults(t, results)
	if res.Complete || !strings.Contains(res.Note, "interrupted") || len(res.Runs) != 1 {
		t.Fatalf("results: complete=%v note=%q runs=%d", res.Complete, res.Note, len(res.Runs))
	}
	if len(res.Runs[0].Faults) == 0 || res.Runs[0].Acquired == 0 {
		t.Fatalf("what ran is not kept: %+v", res.Runs[0])
	}
}

func TestRunBadScenarioIsAUsageErrorAndCreatesNothing(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "r")
	for _, tt := range []struct{ name, body, want string }{
		{"malformed", "name: [x\n", "line 1"},
		{"unknown approach", "name: x\napproaches: [nope]\nduration: 1s\n", `unknown approach "nope"`},
		{"goroutine client paused", "name: x\napproaches: [redis-setnx-px-lua]\nduration: 2s\nclients: {as: goroutines}\nfaults:\n  - {fault: client-pause, target: {client: \"0\"}, at: 1s}\n",
			"run clients as processes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := locklab(tmp, "run", writeScenario(t, tmp, tt.body), "--results", results).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage {
				t.Fatalf("exit: %v, want %d\n%s", err, exitUsage, out)
			}
			if !strings.Contains(string(out), tt.want) || strings.Count(strings.TrimSpace(string(out)), "\n") > 0 {
				t.Fatalf("want one line naming %q, got:\n%s", tt.want, out)
			}
			if _, err := os.Stat(results); !os.IsNotExist(err) {
				t.Fatal("a results folder was created for a run that could not start")
			}
		})
	}
}

// A shipped scenario, run as a user would: the GC pause on the Redis lock
// shows what the scenario says it shows.
func TestRunShippedGCPauseScenario(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	tmp := t.TempDir()
	junit := filepath.Join(tmp, "run.xml")
	out, err := locklab(tmp, "run", "../../scenarios/gc-pause-past-ttl.yaml", "--approach", "redis-setnx-px-lua",
		"--results", filepath.Join(tmp, "r"), "--junit", junit).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "redis-setnx-px-lua: as expected: expected double-grant:outlived + lost-update") {
		t.Fatalf("output:\n%s", out)
	}
	dir, res := readResults(t, filepath.Join(tmp, "r"))
	if _, err := os.Stat(filepath.Join(dir, "timeline-redis-setnx-px-lua.png")); err != nil {
		t.Fatal(err)
	}
	if res.Verdict.AsExpected != 1 || len(res.Runs[0].Faults) < 2 {
		t.Fatalf("verdict %+v, faults %+v", res.Verdict, res.Runs[0].Faults)
	}
	// The expected double grant is a pass for CI: one test case, no failure.
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), `<testsuite name="locklab run" tests="1" failures="0" errors="0" skipped="0">`) {
		t.Fatalf("junit: %v\n%s", err, b)
	}
	waitNoServers(t, tmp)
}

// run --runs N --parallel K: every repetition of every approach runs and is
// judged, as one at a time (the runner's lanes keep a server fault on one
// case's servers).
func TestRunRepeatsSideBySide(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	tmp := t.TempDir()
	// A run left undecided (a ZooKeeper server seen standing still 4.5 s
	// with two busy loops beside the suite) is run again.
	code, out, _ := runDecided(t, []string{"TMPDIR=" + tmp}, filepath.Join(tmp, "r"), "run", "../../scenarios/holder-crash.yaml", "--approach", "redis-setnx-px-lua,zk-sequential",
		"--duration", "3s", "--runs", "2", "--parallel", "2", "--results", filepath.Join(tmp, "r"))
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, res := readResults(t, filepath.Join(tmp, "r"))
	if len(res.Runs) != 4 || res.Verdict.AsExpected != 4 {
		t.Fatalf("%d runs, %d as expected; want 4 and 4\n%s", len(res.Runs), res.Verdict.AsExpected, out)
	}
	for _, want := range []string{"redis-setnx-px-lua: as expected in 2 of 2 runs", "zk-sequential: as expected in 2 of 2 runs"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	waitNoServers(t, tmp)
}

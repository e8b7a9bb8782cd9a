package locklabtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/redis"
	"github.com/locklab/locklab/locklabtest"
)

// A built-in approach, as impls/redis exports it, passes the suite on the
// Redis servers TestLocker starts.
func TestBuiltInApproachConforms(t *testing.T) {
	locklabtest.TestLocker(t, redis.SetNXPXLuaApproach)
}

// recorder is a *testing.T whose failures are recorded instead of failing
// the test, so a test can check that RunScenario fails when it must.
type recorder struct {
	*testing.T
	mu     sync.Mutex
	errors []string
	fatal  string
	logs   []string
	// keep leaves the results a failed recorded test kept in place, for
	// the test that looks at them; otherwise they go when the test ends.
	keep bool
}

// Cleanup runs f when the test ends, then removes the results f kept
// (RunScenario keeps a failed test's), unless r.keep.
func (r *recorder) Cleanup(f func()) {
	r.T.Cleanup(func() {
		f()
		if dir := r.logged("its results are kept in "); dir != "" && !r.keep {
			os.RemoveAll(dir)
		}
	})
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
	r.T.Logf(format, args...)
}

// Failed is whether RunScenario failed the recorded test.
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errors) > 0 || r.fatal != ""
}

// logged returns the folder a log line names after prefix ("" if none).
func (r *recorder) logged(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.logs {
		if _, after, ok := strings.Cut(l, prefix); ok {
			return strings.TrimSpace(after)
		}
	}
	return ""
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Fatalf ends the call as testing does (runtime.Goexit): call runs it on a
// goroutine of its own.
func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) call(f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	<-done
}

func writeScenario(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A scenario that wrongly expects myLock to stay safe while a holder is
// paused past its TTL must fail the test, with the verdict's words. The
// test fails if RunScenario lets it pass.
func TestRunScenarioFailsWhenContradicted(t *testing.T) {
	path := writeScenario(t, `# wrong on purpose: no fencing, so a paused holder outlives its lease
name: contradicted-gc-pause
approaches: [my-lock]
workload: {kind: counter, clients: 4, keys: 1, hold: "uniform:20ms-60ms", ttl: 1s}
clients: {as: processes}
duration: 7s
seed: 7
faults:
  - fault: client-pause
    target: {client: holder, key: 0}
    at: 2s
    for: 3s
expect:
  my-lock: [safe]
`)
	r := &recorder{T: t}
	r.call(func() { locklabtest.RunScenarioOn(r, myLock, path) })
	if r.fatal != "" {
		t.Fatalf("RunScenario could not run the scenario: %s", r.fatal)
	}
	if len(r.errors) == 0 {
		t.Fatal("RunScenario passed a scenario whose expectation (safe) the lock contradicts")
	}
	if got := strings.Join(r.errors, "\n"); !strings.Contains(got, "expected safe, observed") || !strings.Contains(got, "double-grant") {
		t.Errorf("RunScenario failed the test with %q; want the verdict's words (expected safe, observed double-grant...)", got)
	}
	t.Logf("RunScenario failed the test, as it must: %s", strings.Join(r.errors, "; "))
}

// What RunScenario cannot judge fails the test before any server starts.
func TestRunScenarioRefusesWhatItCannotJudge(t *testing.T) {
	noExpectation := writeScenario(t, `name: other-locks-only
approaches: [some-other-lock]
workload: {kind: mutex, clients: 2}
duration: 2s
faults:
  - fault: client-pause
    target: {client: holder, key: 0}
    at: 1s
    for: 1s
expect:
  some-other-lock: [double-grant:outlived]
`)
	noNew := myLock
	noNew.New = nil
	unknownServer := myLock
	unknownServer.Server = "cassandra"
	tests := []struct {
		name     string
		approach impls.Approach
		file     string
		want     string
	}{
		{"the file expects nothing of the approach", myLock, noExpectation, "expects nothing of my-lock"},
		{"no such file", myLock, filepath.Join(t.TempDir(), "missing.yaml"), "no such file"},
		{"an approach without a constructor", noNew, noExpectation, "has no New"},
		{"an unknown server kind", unknownServer, noExpectation, `unknown server kind "cassandra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{T: t}
			r.call(func() { locklabtest.RunScenarioOn(r, tt.approach, tt.file) })
			if !strings.Contains(r.fatal, tt.want) {
				t.Errorf("RunScenario stopped with %q (errors %q), want it to say %q", r.fatal, r.errors, tt.want)
			}
		})
	}
}

// RunScenario keeps a failed test's results and names their folder, and
// removes a passing test's. Each row's recorded test is a subtest, whose
// end runs RunScenario's cleanup; the folder is looked at after it.
func TestRunScenarioKeepsTheResultsOfAFailedTest(t *testing.T) {
	scenario := func(expect string) string {
		return writeScenario(t, `name: kept-or-removed
approaches: [my-lock]
workload: {kind: counter, clients: 2, keys: 1, hold: "uniform:1ms-5ms", ttl: 5s}
duration: 2s
seed: 3
expect:
  my-lock: [`+expect+`]
`)
	}
	tests := []struct {
		name, expect string
		fails        bool
	}{
		{"passes: removed", "safe", false},
		{"fails (an expected double grant never shows): kept", "double-grant:outlived", true},
	}
	for _, tt := range tests {
		path := scenario(tt.expect)
		var r *recorder
		t.Run(tt.name, func(t *testing.T) {
			r = &recorder{T: t, keep: true}
			r.call(func() { locklabtest.RunScenarioOn(r, myLock, path) })
		})
		if r.fatal != "" {
			t.Fatalf("%s: RunScenario could not run the scenario: %s", tt.name, r.fatal)
		}
		if r.Failed() != tt.fails {
			t.Fatalf("%s: the recorded test failed = %v (errors %q), want %v", tt.name, r.Failed(), r.errors, tt.fails)
		}
		dir := r.logged("results in ")
		if dir == "" {
			t.Fatalf("%s: no log line names the results' folder (logs %q)", tt.name, r.logs)
		}
		_, err := os.Stat(filepath.Join(dir, "results.json"))
		switch {
		case tt.fails:
			if err != nil {
				t.Errorf("%s: the failed test's results are gone: %v", tt.name, err)
			}
			if kept := r.logged("its results are kept in "); kept == "" || !strings.HasPrefix(dir, kept) {
				t.Errorf("%s: the log does not say where the results are kept (logs %q)", tt.name, r.logs)
			}
			os.RemoveAll(r.logged("its results are kept in "))
		case !os.IsNotExist(err):
			t.Errorf("%s: the passing test's results are still in %s (stat: %v)", tt.name, dir, err)
		}
	}
}

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

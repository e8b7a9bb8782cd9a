package conformance

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Status is how a test of a standalone run ended.
type Status string

const (
	Passed  Status = "PASS"
	Failed  Status = "FAIL"
	Skipped Status = "SKIP"
)

// Result is one test of a standalone run.
type Result struct {
	Name    string // full name, as testing writes it: Parent/Child
	Status  Status
	Elapsed time.Duration
	// Output is what the test logged, its errors and its skip reason, in
	// order.
	Output []string
	// Subtests is how many subtests it ran.
	Subtests int
	// OwnFailure: it failed itself (an error, a Fatal, a panic), not only
	// because a subtest did.
	OwnFailure bool
}

// Standalone runs tests written against T outside `go test`, as
// `locklab conform` does. Each test runs on a goroutine of its own;
// Fatal and Skip end it with runtime.Goexit, as testing does; a panic in a
// test or a cleanup is that test's failure, never the program's; cleanups
// run last registered first, after the subtests. Subtests run one at a
// time (the suite has no parallel tests).
type Standalone struct {
	// Match, when set, decides by full name which subtests run; one that
	// does not match is neither run nor reported. The top-level test
	// always runs.
	Match func(name string) bool
	// Report, when set, is called as each test ends, subtests before
	// their parent, one call at a time.
	Report func(Result)
}

// Run runs f as the top-level test name and returns the result of every
// test, in the order they ended. When ctx ends first, Run returns at once
// with the results so far and ctx's error: the test still running is
// abandoned (no goroutine can be stopped from outside); it starts no
// further subtests and reports nothing more.
func (s *Standalone) Run(ctx context.Context, name string, f func(T)) ([]Result, error) {
	r := &standaloneRun{ctx: ctx, match: s.Match, report: s.Report}
	top := &standaloneT{run: r, name: rewriteName(name)}
	done := top.start(f)
	select {
	case <-done:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	out := append([]Result(nil), r.results...)
	// Interrupted, even when the tests had ended by the time this looked:
	// once ctx ends they start no further test and return at once, so
	// "done" alone does not say the suite ran to its end (a Ctrl-C read
	// as exit 0 under load).
	return out, ctx.Err()
}

// standaloneRun is what the tests of one Run share.
type standaloneRun struct {
	ctx    context.Context
	match  func(string) bool
	report func(Result)

	mu      sync.Mutex
	results []Result
	closed  bool // Run has returned: late results are dropped
}

func (r *standaloneRun) add(res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.results = append(r.results, res)
	if r.report != nil {
		r.report(res)
	}
}

// standaloneT is one test of a standalone run.
type standaloneT struct {
	run  *standaloneRun
	name string

	mu         sync.Mutex // the suite logs from goroutines of its own
	output     []string
	failed     bool
	ownFailure bool
	skipped    bool
	cleanups   []func()
	subtests   int
	seen       map[string]int // subtest names so far, for "#01" suffixes
}

// start runs f and then the cleanups on a goroutine of their own; the
// channel closes once the test's result is in.
func (t *standaloneT) start(f func(T)) <-chan struct{} {
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		t.recover(guarded(func() { f(t) }))
		t.mu.Lock()
		cleanups := t.cleanups
		t.cleanups = nil
		t.mu.Unlock()
		for i := len(cleanups) - 1; i >= 0; i-- {
			t.recover(guarded(cleanups[i]))
		}
		t.run.add(t.result(time.Since(began)))
	}()
	return done
}

// recover records a panic as the test's failure.
func (t *standaloneT) recover(p *panicked) {
	if p != nil {
		t.fail(fmt.Sprintf("panic: %v\n%s", p.value, p.stack))
	}
}

type panicked struct {
	value any
	stack []byte
}

// guarded runs fn on a goroutine of its own and waits for it: a
// runtime.Goexit (Fatal, Skip) ends only that goroutine, and a panic is
// returned, not raised.
func guarded(fn func()) *panicked {
	out := make(chan *panicked, 1)
	go func() {
		returned := false
		defer func() {
			if returned {
				out <- nil
				return
			}
			if v := recover(); v != nil {
				out <- &panicked{value: v, stack: debug.Stack()}
				return
			}
			out <- nil // runtime.Goexit
		}()
		fn()
		returned = true
	}()
	return <-out
}

func (t *standaloneT) result(elapsed time.Duration) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := Passed
	switch {
	case t.failed:
		st = Failed
	case t.skipped:
		st = Skipped
	}
	return Result{Name: t.name, Status: st, Elapsed: elapsed, Output: append([]string(nil), t.output...),
		Subtests: t.subtests, OwnFailure: t.ownFailure}
}

func (t *standaloneT) Name() string { return t.name }

func (t *standaloneT) Run(name string, f func(T)) bool {
	t.mu.Lock()
	if t.seen == nil {
		t.seen = map[string]int{}
	}
	name = rewriteName(name)
	n := t.seen[name]
	t.seen[name]++
	t.mu.Unlock()
	full := t.name + "/" + name
	if n > 0 {
		full = fmt.Sprintf("%s#%02d", full, n)
	}
	if t.run.match != nil && !t.run.match(full) {
		return true
	}
	if t.run.ctx.Err() != nil {
		return false // interrupted: start nothing more
	}
	t.mu.Lock()
	t.subtests++
	t.mu.Unlock()
	c := &standaloneT{run: t.run, name: full}
	<-c.start(f)
	if c.Failed() {
		t.mu.Lock()
		t.failed = true
		t.mu.Unlock()
	}
	return !c.Failed()
}

// rewriteName spells a test name as testing does: white space becomes
// underscores, so the name is one word on a command line.
func rewriteName(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, name)
}

// Helper does nothing: the output names no file:line.
func (t *standaloneT) Helper() {}

func (t *standaloneT) log(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.output = append(t.output, s)
}

func (t *standaloneT) fail(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.output = append(t.output, s)
	t.failed, t.ownFailure = true, true
}

func (t *standaloneT) Logf(format string, args ...any)   { t.log(fmt.Sprintf(format, args...)) }
func (t *standaloneT) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }

func (t *standaloneT) Fatal(args ...any) {
	t.fail(strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
	runtime.Goexit()
}

func (t *standaloneT) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (t *standaloneT) Skip(args ...any) {
	t.skip(strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
}

func (t *standaloneT) Skipf(format string, args ...any) { t.skip(fmt.Sprintf(format, args...)) }

func (t *standaloneT) skip(reason string) {
	t.mu.Lock()
	t.output = append(t.output, reason)
	t.skipped = true
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *standaloneT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *standaloneT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

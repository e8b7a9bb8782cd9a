package conformance

import "testing"

// T is what the suite needs of a test: the part of *testing.T it uses. The
// same suite then runs under `go test` (Run wraps the *testing.T) and in
// locklab's own runner (Standalone, for `locklab conform`), which cannot
// build a *testing.T. The suite never calls t.Parallel: its tests share
// the servers and some restart them.
type T interface {
	Name() string
	// Run runs f as a subtest and waits for it; it reports whether the
	// subtest passed (or was skipped).
	Run(name string, f func(T)) bool
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	// Fatal and Fatalf fail the test and end it (runtime.Goexit): call
	// them from the test's own goroutine only.
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	// Skip and Skipf end the test as skipped, saying why.
	Skip(args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	// Cleanup registers f to run when the test and its subtests are done;
	// cleanups run last registered first.
	Cleanup(f func())
}

// testingT is a *testing.T as a T. Every method but Run is the embedded
// one: the promoted methods are wrappers the runtime leaves out of call
// stacks, so t.Helper and the file:line of t.Errorf point into the suite
// as they do with a plain *testing.T.
type testingT struct{ *testing.T }

func (t testingT) Run(name string, f func(T)) bool {
	return t.T.Run(name, func(t *testing.T) { f(testingT{t}) })
}

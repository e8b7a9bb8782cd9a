package keptdir

import (
	"os"
	"testing"
)

// fakeT records a failure and runs its cleanups when told, so New's two
// sides are seen without failing this test.
type fakeT struct {
	testing.TB
	failed   bool
	cleanups []func()
}

func (f *fakeT) Helper()             {}
func (f *fakeT) Failed() bool        { return f.failed }
func (f *fakeT) Cleanup(fn func())   { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Logf(string, ...any) {}
func (f *fakeT) Fatal(args ...any)   { panic(args) }
func (f *fakeT) finish() {
	for _, fn := range f.cleanups {
		fn()
	}
}

func TestKeptOnlyWhenFailed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failed bool
		kept   bool
	}{{"passed", false, false}, {"failed", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeT{TB: t, failed: tc.failed}
			dir := New(f, "keptdir-test-")
			f.finish()
			_, err := os.Stat(dir)
			if kept := err == nil; kept != tc.kept {
				t.Errorf("kept %v, want %v (%v)", kept, tc.kept, err)
			}
			_ = os.RemoveAll(dir)
		})
	}
}

// Package keptdir gives tests a results directory that outlives a failure:
// what a run recorded (histories, found files, pages) is what tells a
// timing failure from a bug, and t.TempDir removes it with the test.
package keptdir

import (
	"os"
	"testing"
)

// New makes a directory named for prefix that is removed when t passes and
// kept, with its path logged, when t failed.
func New(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

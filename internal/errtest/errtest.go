// Package errtest checks errors in table tests.
package errtest

import (
	"strings"
	"testing"
)

// Want fails t unless err holds want, or is nil when want is "".
func Want(t testing.TB, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

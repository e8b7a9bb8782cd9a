package checker

import (
	"slices"
	"testing"
)

// classesDeclared fails t when v holds a violation of a class no check
// declares: verdict's outcome table, which walks Classes, would not know it.
func classesDeclared(t testing.TB, v Verdict) {
	t.Helper()
	all := Classes()
	for _, x := range v.Violations {
		if !slices.Contains(all, x.Kind) {
			t.Errorf("violation of class %q, which no check declares (Classes: %v)", x.Kind, all)
		}
	}
}

// Each class is one check's: two checks declaring one class would make
// its count the sum of two ideas of it.
func TestEachClassIsOneChecks(t *testing.T) {
	all := Classes()
	if len(all) == 0 {
		t.Fatal("no check declares a class")
	}
	for i, c := range all {
		if slices.Contains(all[:i], c) {
			t.Errorf("class %q declared twice", c)
		}
		if c == RevokedInRelease {
			t.Errorf("%q is an anomaly, no violation: no check declares it", c)
		}
	}
}

package conformance

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/internal/errtest"
)

func TestOptionsValidate(t *testing.T) {
	one := []impls.Approach{{Name: "a", Server: impls.Redis}}
	for _, tc := range []struct {
		name    string
		o       Options
		wantErr string
	}{
		{"every test", Options{Approaches: one}, ""},
		{"a filter", Options{Approaches: one, Match: "Mutual|Crash"}, ""},
		{"no approach", Options{Match: "x"}, "no approach to test"},
		{"a filter that does not compile", Options{Approaches: one, Match: "("}, "--run: error parsing regexp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errtest.Want(t, tc.o.Validate(), tc.wantErr)
		})
	}
}

func TestLookupAndServers(t *testing.T) {
	reg := impls.NewRegistry()
	reg.Register(impls.Approach{Name: "r1", Server: impls.Redis})
	reg.Register(impls.Approach{Name: "r2", Server: impls.Redis})
	reg.Register(impls.Approach{Name: "z", Server: impls.ZooKeeper})
	for _, tc := range []struct {
		names   string
		want    []impls.Server
		wantErr string
	}{
		{"r1", []impls.Server{impls.Redis}, ""},
		{"r1, z,r2", []impls.Server{impls.Redis, impls.ZooKeeper}, ""},
		{"r1,nope", nil, `unknown approach "nope"`},
		{"", nil, `unknown approach ""`},
	} {
		as, err := Lookup(reg, tc.names)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Lookup(%q): %v, want an error containing %q", tc.names, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Lookup(%q): %v", tc.names, err)
		}
		if got := (Options{Approaches: as}).Servers(); !slices.Equal(got, tc.want) {
			t.Errorf("Lookup(%q): servers %v, want %v", tc.names, got, tc.want)
		}
	}
}

func TestFailuresAndCount(t *testing.T) {
	rs := []Result{
		{Name: "a", Subtests: 3},
		{Name: "a/Pass", Status: Passed},
		{Name: "a/Fail", Status: Failed},
		{Name: "a/Skip", Status: Skipped},
		{Name: "b", Status: Failed, OwnFailure: true},
	}
	if got, want := Failures(rs), []string{"a/Fail", "b"}; !slices.Equal(got, want) {
		t.Errorf("Failures: %v, want %v", got, want)
	}
	if got, want := Count(rs), "1 passed, 2 failed, 1 skipped"; got != want {
		t.Errorf("Count: %q, want %q", got, want)
	}
}

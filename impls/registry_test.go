package impls

import (
	"strings"
	"testing"
)

func TestRegistryUnknownNameListsKnown(t *testing.T) {
	r := NewRegistry()
	r.Register(Approach{Name: "b"})
	r.Register(Approach{Name: "a"})
	if _, err := r.Get("a"); err != nil {
		t.Fatal(err)
	}
	_, err := r.Get("zz")
	if err == nil || !strings.Contains(err.Error(), `unknown approach "zz" (known: a, b)`) {
		t.Fatalf("err = %v", err)
	}
}

func TestRegistryDuplicatePanics(t *testing.T) {
	r := NewRegistry()
	r.Register(Approach{Name: "a"})
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate registration did not panic")
		}
	}()
	r.Register(Approach{Name: "a"})
}

// An unknown name close to a known one is answered with it.
func TestNearest(t *testing.T) {
	names := []string{"etcd-lease", "redis-redlock", "redis-redlock-quorum", "redis-setnx", "redis-setnx-px-del", "redis-setnx-px-lua", "zk-ephemeral", "zk-sequential"}
	for _, tc := range []struct{ typed, want string }{
		{"redis-setnx-px-lau", "redis-setnx-px-lua"}, // two letters swapped
		{"redis-setnx-pxlua", "redis-setnx-px-lua"},  // one left out
		{"etcd-leases", "etcd-lease"},
		{"zk-sequental", "zk-sequential"},
		{"ephemeral", "zk-ephemeral"}, // held whole by one name
		{"redlock", ""},               // held whole by two: no guess
		{"mysql-for-update", ""},      // nothing near
		{"redis-setnx-px-dle", "redis-setnx-px-del"},
	} {
		if got := Nearest(tc.typed, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
	r := NewRegistry()
	for _, n := range names {
		r.Register(Approach{Name: n})
	}
	if _, err := r.Get("redis-setnx-px-lau"); err == nil || !strings.Contains(err.Error(), `unknown approach "redis-setnx-px-lau": did you mean "redis-setnx-px-lua"? (known: `) {
		t.Errorf("err = %v", err)
	}
}

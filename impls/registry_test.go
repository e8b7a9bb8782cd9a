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

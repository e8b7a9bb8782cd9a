package all

import (
	"testing"

	"github.com/locklab/locklab/impls/declared"
)

// Every approach's declarations are pinned in impls/declared, reviewed like
// code. The conformance suite chooses its tests from these declarations,
// so dropping one (a capability, "safe", a weakness) would silently drop
// the test that proves it: a change there must be deliberate, and this
// test makes it so. The matrix also loads against that table where the
// approaches are not linked, so it must say what they say.
func TestDeclaredPromisesArePinned(t *testing.T) {
	reg := Registry()
	seen := map[string]bool{}
	for _, a := range reg.All() {
		seen[a.Name] = true
		want, ok := declared.Pinned[a.Name]
		if !ok {
			t.Errorf("%s: not in impls/declared's table; add %q after review", a.Name, declared.Line(a))
			continue
		}
		if got := declared.Line(a); got != want {
			t.Errorf("%s declares %q, pinned %q: a changed declaration changes which tests prove it", a.Name, got, want)
		}
	}
	for name := range declared.Pinned {
		if !seen[name] {
			t.Errorf("%s is pinned but no longer registered", name)
		}
	}
	d, err := declared.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.All() {
		if got := declared.Line(a); got != declared.Pinned[a.Name] {
			t.Errorf("%s: the table's line %q reads back as %q", a.Name, declared.Pinned[a.Name], got)
		}
	}
}

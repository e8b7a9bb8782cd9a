package conformance

import (
	"os"
	"regexp"
	"testing"

	"github.com/locklab/locklab/impls/memlock"
)

// TestConformDocNamesEveryCheck keeps docs/conform.md's table to the
// suite: one row per check, none for a check that is gone.
func TestConformDocNamesEveryCheck(t *testing.T) {
	doc, err := os.ReadFile("../docs/conform.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = true
	}
	s := &suite{h: Harness{Approach: memlock.NewService(1).Approach("mem")}}
	for _, c := range s.checks() {
		if !rows[c.name] {
			t.Errorf("docs/conform.md has no row for %s", c.name)
		}
		delete(rows, c.name)
	}
	for name := range rows {
		t.Errorf("docs/conform.md has a row for %s, which the suite does not run", name)
	}
}

package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/verdict"
)

// The legends of the compact table that docs/matrix.md quotes say what the outcome table says: each "ABBR = words" of an
// abbreviation has its row's legend, and every other left side is a
// phrase, not an abbreviation the table lacks.
func TestQuotedLegendsAreTheOutcomeTable(t *testing.T) {
	legend := map[string]string{}
	for _, r := range verdict.Rows() {
		legend[r.Abbrev] = r.Legend
	}
	for _, page := range []string{filepath.Join("docs", "matrix.md")} {
		b, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			t.Fatal(err)
		}
		pairs := 0
		for _, para := range strings.Split(string(b), "\n\n") {
			para = strings.TrimSuffix(strings.Join(strings.Fields(para), " "), ".")
			if _, ok := legend[strings.SplitN(para, " = ", 2)[0]]; !ok || !strings.Contains(para, " = ") {
				continue
			}
			for _, part := range strings.Split(para, "; ") {
				left, right, _ := strings.Cut(part, " = ")
				want, ok := legend[left]
				switch {
				case ok && right != want:
					t.Errorf("%s: %q, the outcome table says %q", page, part, left+" = "+want)
				case !ok && !strings.ContainsAny(left, " `\"?"):
					t.Errorf("%s: %q: no outcome is abbreviated %s", page, part, left)
				}
				pairs++
			}
		}
		if pairs < 3 {
			t.Errorf("%s: %d pairs of a legend found: it no longer reads as one", page, pairs)
		}
	}
}

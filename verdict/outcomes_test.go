package verdict

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

// Every class of violation the checker's checks find has one row of the
// outcome table, whole: Observe counts it as that row's outcome, which is
// unsafe and has its abbreviation, its legend, its meaning and a found
// file's words.
func TestEveryClassIsWhole(t *testing.T) {
	for _, c := range checker.Classes() {
		t.Run(string(c), func(t *testing.T) {
			var in []Outcome
			for _, r := range Rows() {
				if slices.Contains(r.Classes, c) {
					in = append(in, r.Outcome)
				}
			}
			if len(in) != 1 {
				t.Fatalf("class %q is in the rows of %v, want one row", c, in)
			}
			o := Observe(checker.Verdict{Linearizable: checker.LinNo, Violations: []checker.Violation{{Kind: c}}}, true, Liveness{})
			if o.Counts[in[0]] != 1 || len(o.Counts) != 1 {
				t.Errorf("observed %v, want one %s", o.Counts, in[0])
			}
			if r, _ := in[0].Row(); !r.Unsafe || r.Found == "" {
				t.Errorf("%s: unsafe %v, found file's words %q: a violation is unsafe and has words", r.Outcome, r.Unsafe, r.Found)
			}
		})
	}
}

// The rows agree with one another and with the checker: every outcome
// parses, reads in the matrix's table under an abbreviation of its own,
// says what it means; only an unsafe one, blocked (explore's liveness
// finding) or unrecovered (its finding about the servers) is found by
// explore, and it has words for it; a family is an outcome; only a consequence is fenced away;
// no row names a class no check finds.
func TestOutcomeTableIsWhole(t *testing.T) {
	classes := checker.Classes()
	var abbrevs []string
	for _, r := range Rows() {
		t.Run(string(r.Outcome), func(t *testing.T) {
			if o, err := Parse(string(r.Outcome)); err != nil || o != r.Outcome {
				t.Errorf("Parse = %q, %v", o, err)
			}
			if r.Abbrev == "" || r.Legend == "" || r.Meaning == "" || slices.Contains(abbrevs, r.Abbrev) {
				t.Errorf("abbreviation %q (taken: %v), legend %q, meaning %q", r.Abbrev, abbrevs, r.Legend, r.Meaning)
			}
			abbrevs = append(abbrevs, r.Abbrev)
			if (r.Unsafe || r.Outcome == Blocked || r.Outcome == Unrecovered) != (r.Found != "") {
				t.Errorf("unsafe %v but found file's words %q", r.Unsafe, r.Found)
			}
			if _, ok := r.Family.Row(); r.Family != "" && !ok {
				t.Errorf("family %q is no outcome", r.Family)
			}
			if r.FencedAway && !r.Consequence || r.Liveness && r.Unsafe {
				t.Errorf("fenced away %v without being a consequence, or liveness %v and unsafe", r.FencedAway, r.Liveness)
			}
			for _, c := range r.Classes {
				if !slices.Contains(classes, c) {
					t.Errorf("class %q: no check finds it (checker.Classes)", c)
				}
			}
		})
	}
}

// docs/scenarios.md's table of outcomes is the outcome table: each row
// in order, with its unsafe mark and its meaning.
func TestScenarioDocsListEveryOutcome(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Outcomes\n")
	if !ok {
		t.Fatal("docs/scenarios.md has no ### Outcomes section")
	}
	var got []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			got = append(got, line)
		} else if len(got) > 0 {
			break
		}
	}
	var want []string
	for _, r := range Rows() {
		mark := " "
		if r.Unsafe {
			mark = " yes "
		}
		want = append(want, "| `"+string(r.Outcome)+"` |"+mark+"| "+r.Meaning+" |")
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/scenarios.md's outcomes:\n%s\nwant (the outcome table):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

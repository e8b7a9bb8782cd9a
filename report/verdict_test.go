package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/checker"
)

func TestWriteVerdict(t *testing.T) {
	violations := func(n int) []checker.Violation {
		var out []checker.Violation
		for i := range n {
			out = append(out, checker.Violation{Kind: checker.LostUpdate, Text: fmt.Sprintf("update %d lost", i)})
		}
		return out
	}
	keys := func(n, bad int) []checker.KeyResult {
		var out []checker.KeyResult
		for i := range n {
			r := checker.KeyResult{Key: fmt.Sprintf("k%d", i), Result: porcupine.Ok}
			if i < bad {
				r.Result = porcupine.Illegal
			}
			out = append(out, r)
		}
		return out
	}
	l := Limits{AllKeys: 2, Keys: 3, Violations: 2}
	tests := []struct {
		name    string
		v       checker.Verdict
		want    []string
		notWant []string
	}{
		{"clean", checker.Verdict{Events: 4, Keys: 1, Linearizable: checker.LinYes, Linear: keys(1, 0)},
			[]string{"h: 4 events, 1 keys\n", "  key k0: linearizable", "verdict: OK (linearizable"}, nil},
		{"linearizability skipped", checker.Verdict{Linearizable: checker.LinSkipped},
			[]string{"verdict: OK (no double grant, no resource anomaly; linearizability not checked)"}, nil},
		{"violations cut at the limit", checker.Verdict{Linearizable: checker.LinYes, Violations: violations(5),
			Classes: map[checker.Class]int{checker.LostUpdate: 5}},
			[]string{"  LOST UPDATE: update 1 lost\n  ... and 3 more\n", "verdict: VIOLATION: 5 lost update (linearizable: yes)"},
			[]string{"update 2 lost"}},
		{"many keys: the failing ones and a count", checker.Verdict{Linearizable: checker.LinNo, Linear: keys(5, 1),
			Classes: map[checker.Class]int{}},
			[]string{"  key k0: NOT linearizable", "  4 of 5 keys linearizable", "verdict: VIOLATION"},
			[]string{"key k1:"}},
		{"too many failing keys", checker.Verdict{Linearizable: checker.LinNo, Linear: keys(5, 5), Classes: map[checker.Class]int{}},
			[]string{"  key k2: NOT", "  ... 2 more keys", "  0 of 5 keys linearizable"}, []string{"key k3:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteVerdict(&b, "h", tt.v, l); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestAddVerdict(t *testing.T) {
	v := checker.Verdict{Linearizable: checker.LinNo, RefusedWrites: 2,
		DoubleGrants: []checker.DoubleGrant{{Kind: checker.OutlivedLease}},
		Violations: []checker.Violation{{Kind: checker.DoubleGrantOutlived, Text: "two holders"}, {Kind: checker.LostUpdate, Text: "lost"},
			{Kind: checker.LostUpdate, Text: "lost again"}},
		Linear: []checker.KeyResult{{Key: "k", HTML: "/r/linearizability/k.html"}}}
	var r Run
	r.AddVerdict(v, "/r", Limits{Violations: 2})
	want := []string{"double grant: holder outlived its lease: two holders", "lost update: lost", "... and 1 more"}
	if strings.Join(r.Violations, "|") != strings.Join(want, "|") {
		t.Errorf("violations %q, want %q", r.Violations, want)
	}
	if r.DoubleGrants != 1 || r.ViolationCount != 3 || r.ViolationKinds[checker.LostUpdate] != 2 || r.Linearizable != checker.LinNo ||
		r.RefusedStaleRequests != 2 || r.Safe() {
		t.Errorf("counts not copied: %+v", r)
	}
	if len(r.Artifacts) != 1 || r.Artifacts[0] != "linearizability/k.html" {
		t.Errorf("artifacts %q, want the visualization relative to the results folder", r.Artifacts)
	}
}

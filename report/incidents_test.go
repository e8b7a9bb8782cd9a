package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/verdict"
)

func TestIncidents(t *testing.T) {
	s := func(n float64) int64 { return int64(n * float64(time.Second)) }
	iv := func(proc int, idx int64, from, to float64) checker.Interval {
		return checker.Interval{Key: "k", Proc: proc, StartIndex: idx, Start: s(from), End: s(to)}
	}
	// Client 1 paused from 2 s to 5 s, its lease ending at 3 s: clients 2,
	// 3 and 4 granted one after the other while it slept (one incident).
	paused := iv(1, 10, 1.9, 5.1)
	outlived := []checker.DoubleGrant{
		{Key: "k", Kind: checker.OutlivedLease, Held: paused, Second: iv(2, 20, 3.1, 3.2)},
		{Key: "k", Kind: checker.OutlivedLease, Held: paused, Second: iv(3, 30, 3.3, 3.4)},
		{Key: "k", Kind: checker.OutlivedLease, Held: paused, Second: iv(4, 40, 3.5, 3.6)},
	}
	// Woken, client 1's plain DEL frees client 4's lock, and client 2 is
	// granted while client 4's lease is valid; client 2's own DEL then
	// frees client 3's, and client 4 is granted: one cascade, one incident.
	bothValid := checker.DoubleGrant{Key: "k", Kind: checker.BothValid, Held: iv(4, 50, 5.0, 5.3), Second: iv(2, 60, 5.2, 5.25)}
	cascade := checker.DoubleGrant{Key: "k", Kind: checker.BothValid, Held: iv(3, 62, 5.26, 5.5), Second: iv(4, 64, 5.4, 5.45)}
	// Another pause, 4 s later, another cascade.
	later := checker.DoubleGrant{Key: "k", Kind: checker.BothValid, Held: iv(1, 90, 9.2, 9.6), Second: iv(3, 92, 9.5, 9.55)}
	times := map[int64]struct {
		t    float64
		proc int
	}{70: {5.1, 1}, 71: {5.12, 3}, 72: {5.3, 1}, 73: {5.31, 2}, 80: {9.0, 2}, 81: {9.1, 3}}
	at := func(i int64) (int64, int, bool) {
		x, ok := times[i]
		return s(x.t), x.proc, ok
	}
	v := checker.Verdict{DoubleGrants: append(outlived, later, cascade, bothValid),
		Violations: []checker.Violation{
			{Kind: checker.DoubleGrantOutlived, Events: []int64{10, 20}},
			{Kind: checker.LostUpdate, Events: []int64{70, 71}},
			{Kind: checker.LostUpdate, Events: []int64{72, 73}}, // 0.2 s later: the same incident
			{Kind: checker.LostUpdate, Events: []int64{80, 81}}, // 3.7 s later: another
		}}
	got := Incidents(v, at, s(14))
	want := []struct {
		class verdict.Outcome
		held  string
		procs string
		count int
	}{
		{verdict.DoubleGrantOutlived, "[1]", "[2 3 4]", 3},
		{verdict.LostUpdate, "[]", "[1 2 3]", 2},
		{verdict.DoubleGrantBothValid, "[3 4]", "[2 4]", 2},
		{verdict.LostUpdate, "[]", "[2 3]", 1},
		{verdict.DoubleGrantBothValid, "[1]", "[3]", 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d incidents, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Class != w.class || fmt.Sprint(g.Held) != w.held || fmt.Sprint(g.Procs) != w.procs || g.Count != w.count {
			t.Errorf("incident %d = %s held %v procs %v count %d, want %s held %s procs %s count %d", i, g.Class, g.Held, g.Procs, g.Count, w.class, w.held, w.procs, w.count)
		}
	}
	faults := []Fault{{Fault: "client-pause", Target: "client 1", At: 2, For: 3}}
	for _, tc := range []struct {
		name     string
		deciding []verdict.Outcome
		most     int
		decided  []string
		rest     []string
	}{
		{"both-valid decides, the rest after", []verdict.Outcome{verdict.DoubleGrantBothValid}, 10,
			[]string{"double-grant:both-valid: held by clients 3, 4, granted to clients 2, 4, at 5.20 s for 0.25 s, 2 time(s) (events 50, 60); after client-pause on client 1 (healed 0.20 s before)",
				"double-grant:both-valid: held by client 1, granted to client 3, at 9.50 s for 0.05 s, 1 time(s) (events 90, 92); after client-pause on client 1 (healed 4.50 s before)"},
			[]string{"double-grant:outlived: held by client 1, granted to clients 2, 3, 4, at 3.10 s for 0.50 s, 3 time(s) (events 10, 20); during client-pause on client 1 (2.00 s to 5.00 s)",
				"lost-update: clients 1, 2, 3, at 5.10 s for 0.21 s, 2 time(s) (events 70, 71); after client-pause on client 1 (healed 0.10 s before)",
				"lost-update: clients 2, 3, at 9.00 s for 0.10 s, 1 time(s) (events 80, 81); after client-pause on client 1 (healed 4.00 s before)"}},
		{"deciding lines are never cut, the rest is", []verdict.Outcome{verdict.LostUpdate}, 1,
			[]string{"lost-update: clients 1, 2, 3, at 5.10 s", "lost-update: clients 2, 3, at 9.00 s"},
			[]string{"double-grant:outlived: held by client 1", "double-grant:both-valid: 2 more incident(s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decided, rest := IncidentLines(got, tc.deciding, faults, 0, tc.most)
			check := func(what string, got, want []string) {
				if len(got) != len(want) {
					t.Fatalf("%s: %q, want %d lines like %q", what, got, len(want), want)
				}
				for i := range want {
					if !strings.HasPrefix(got[i], want[i]) {
						t.Errorf("%s line %d: %q, want it to start %q", what, i, got[i], want[i])
					}
				}
			}
			check("decided", decided, tc.decided)
			check("rest", rest, tc.rest)
		})
	}
}

// A contradiction prints its verdict, then the incidents that decided it,
// then the others: not its first violations, which may all be of an
// expected class, cut off by "... and N more".
func TestPrintRunsLeadsWithTheDeciding(t *testing.T) {
	run := Run{Case: "mine", Status: verdict.Contradicts, Explanation: "expected double-grant:outlived, observed double-grant:both-valid, which nothing predicts",
		Violations: []string{"double grant: holder outlived its lease: ...", "... and 245 more"},
		Deciding:   []string{"double-grant:both-valid: client 4 held, client 2 granted"},
		Incidents:  []string{"double-grant:outlived: client 1 held, clients 2, 3 granted"}}
	var out strings.Builder
	PrintRuns(&out, []Run{run})
	text := out.String()
	verdictAt := strings.Index(text, "mine: contradicts expectation: expected")
	decided := strings.Index(text, "mine: decided by double-grant:both-valid")
	also := strings.Index(text, "mine: also double-grant:outlived")
	if verdictAt < 0 || decided < verdictAt || also < decided {
		t.Errorf("want the verdict, then the deciding incident, then the others:\n%s", text)
	}
	if strings.Contains(text, "245 more") {
		t.Errorf("the first violations printed beside the incidents:\n%s", text)
	}
	// The JUnit failure of the CI gate says the same, in that order.
	b, err := RunsJUnit("run", []Run{run}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := string(b)
	if i, j := strings.Index(x, "decided by double-grant:both-valid"), strings.Index(x, "also double-grant:outlived"); i < 0 || j < i || strings.Contains(x, "245 more") {
		t.Errorf("JUnit failure does not lead with the deciding incident:\n%s", x)
	}
}

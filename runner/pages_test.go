package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/report"
)

// A case that showed violations has its page (its timeline's data: a lane
// per client of the case, named by its slot, whatever process ids the
// run gave it) and the page of the history lines its violations cite,
// each anchored where the page's links point.
func TestRunWritesTheCasePageAndItsHistoryLines(t *testing.T) {
	svc := memlock.NewService(1)
	svc.Racy = true
	p := memoryPlan(t, svc, 4, 300*time.Millisecond)
	// A first case takes process ids 0..3: the second's clients are
	// processes 4 and up, still clients 0..3 of their case.
	second := p.Cases[0]
	second.Name = "memory-again"
	p.Cases = append(p.Cases, second)
	out, err := (&Runner{}).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results.Runs[1]
	if r.Case != "memory-again" || r.DoubleGrants == 0 {
		t.Fatalf("second run %s: %d double grants, want some", r.Case, r.DoubleGrants)
	}
	for _, f := range []string{"timeline-memory-again.html", "history-memory-again.html"} {
		if !slices.Contains(r.Artifacts, f) {
			t.Errorf("the run's artifacts %v lack %s", r.Artifacts, f)
		}
	}
	page, err := os.ReadFile(filepath.Join(out.Dir, "timeline-memory-again.html"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no data in the page")
	}
	var d report.TimelineData
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range d.Lanes {
		names = append(names, l.Name)
		for _, p := range l.Procs {
			if p < 4 {
				t.Errorf("lane %s ran process %d, one of the first case's", l.Name, p)
			}
		}
	}
	if !slices.Equal(names, []string{"client 0", "client 1", "client 2", "client 3"}) {
		t.Errorf("lanes %q, want client 0..3", names)
	}
	if len(d.Incidents) == 0 || len(d.Viols) == 0 || d.History != "history-memory-again.html" {
		t.Fatalf("%d incidents, %d violations, history page %q", len(d.Incidents), len(d.Viols), d.History)
	}
	hist, err := os.ReadFile(filepath.Join(out.Dir, d.History))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range d.Viols[0].Events {
		want := fmt.Sprintf(`id="i%d"><span class="n">%d</span>{&#34;proc&#34;:`, ev.Index, ev.Line)
		if !regexp.MustCompile(regexp.QuoteMeta(want)).Match(hist) {
			t.Errorf("the history page has no line %d for event %d", ev.Line, ev.Index)
		}
	}
}

package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls/memlock"
)

// A session runs the cases its caller picks one at a time, each with its
// own events and verdict, all in one results folder; a lean plan draws
// timelines only of cases that showed a violation.
func TestSessionRunsCasesOneAtATime(t *testing.T) {
	safe := memoryPlan(t, memlock.NewService(1), 3, 200*time.Millisecond)
	racySvc := memlock.NewService(1)
	racySvc.Racy = true
	racy := memoryPlan(t, racySvc, 8, 300*time.Millisecond)
	p := safe
	p.Lean = true
	x, err := (&Runner{}).Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	first := safe.Cases[0]
	first.Name = "first"
	res1, err := x.RunCase(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	if !res1.Check.Safe() || res1.Run.Acquired == 0 {
		t.Fatalf("first case: safe=%v acquired=%d, want a safe case that granted", res1.Check.Safe(), res1.Run.Acquired)
	}
	grants := 0
	for _, ev := range res1.Events {
		if ev.F == history.Acquire && ev.Type == history.OK {
			grants++
		}
	}
	if int64(grants) != res1.Run.Acquired {
		t.Errorf("events hold %d grants, the run counted %d", grants, res1.Run.Acquired)
	}
	second := racy.Cases[0]
	second.Name = "second"
	res2, err := x.RunCase(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Check.Safe() || len(res2.Check.DoubleGrants) == 0 {
		t.Fatal("the racy case showed no double grant")
	}
	for _, ev := range res2.Events {
		if ev.Index <= res1.Events[len(res1.Events)-1].Index {
			t.Fatalf("the second case's events include event %d of the first", ev.Index)
		}
	}
	out, err := x.Close(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Dir != x.Dir() || len(out.Results.Runs) != 2 || !out.Results.Complete {
		t.Fatalf("outcome: dir %s (session %s), %d runs, complete %v", out.Dir, x.Dir(), len(out.Results.Runs), out.Results.Complete)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, "timeline-second.png")); err != nil {
		t.Errorf("no timeline of the case that showed a violation: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, "timeline-first.png")); err == nil {
		t.Error("a lean session drew the timeline of a safe case")
	}
	if m, _ := filepath.Glob(filepath.Join(out.Dir, "*.hgrm")); len(m) > 0 {
		t.Errorf("a lean session wrote latency files: %v", m)
	}
}

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

// A parallel session runs a batch of cases side by side (their histories
// overlap in time), returns their results in the order given, each with
// events of its own, and keeps every one in the results.
func TestSessionRunsABatchSideBySide(t *testing.T) {
	p := memoryPlan(t, memlock.NewService(1), 3, 400*time.Millisecond)
	p.Lean = true
	x, err := (&Runner{Parallel: true, MaxCases: 4}).Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var batch []Case
	for _, name := range []string{"d", "b", "a", "c"} {
		c := p.Cases[0]
		c.Name = name
		batch = append(batch, c)
	}
	res, err := x.RunCases(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	var latestStart, earliestEnd int64 = 0, 1 << 62
	procs := map[int]string{}
	for i, r := range res {
		if r.Run.Case != batch[i].Name || len(r.Events) == 0 || r.Run.Acquired == 0 {
			t.Fatalf("result %d: case %q, %d events, %d grants; want %q with grants", i, r.Run.Case, len(r.Events), r.Run.Acquired, batch[i].Name)
		}
		latestStart = max(latestStart, r.Events[0].T)
		earliestEnd = min(earliestEnd, r.Events[len(r.Events)-1].T)
		for _, ev := range r.Events {
			if other, ok := procs[ev.Proc]; ok && other != r.Run.Case && ev.Proc >= 0 {
				t.Fatalf("process %d records in cases %s and %s", ev.Proc, other, r.Run.Case)
			}
			procs[ev.Proc] = r.Run.Case
		}
	}
	if latestStart >= earliestEnd {
		t.Errorf("the cases did not run side by side: the last started at %d, the first ended at %d", latestStart, earliestEnd)
	}
	out, err := x.Close(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results.Runs) != len(batch) || !out.Results.Complete {
		t.Fatalf("%d runs kept, complete %v", len(out.Results.Runs), out.Results.Complete)
	}
}

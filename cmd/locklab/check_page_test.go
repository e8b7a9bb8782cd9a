package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/locklab/locklab/report"
)

// check --timeline FILE.html writes the page of the history: a lane per
// process, the violation placed and its events linked to their lines.
func TestCheckTimelinePage(t *testing.T) {
	hist := filepath.Join("..", "..", "checker", "testdata", "double-grant-outlived.jsonl")
	page := filepath.Join(t.TempDir(), "t.html")
	cmd := exec.Command(binary, "check", hist, "--timeline", page)
	out, _ := cmd.CombinedOutput()
	if got := cmd.ProcessState.ExitCode(); got != exitUnsafe {
		t.Fatalf("exit %d, want %d\n%s", got, exitUnsafe, out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no data in the page")
	}
	var d report.TimelineData
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Viols) == 0 || len(d.Incidents) != 1 || d.HistoryFile != hist {
		t.Fatalf("%d violations in %d incidents, history %q", len(d.Viols), len(d.Incidents), d.HistoryFile)
	}
	for _, ev := range d.Viols[0].Events {
		if ev.Line != ev.Index+1 || ev.T < 0 || ev.Lane < 0 || d.Lanes[ev.Lane].Name[:8] != "process " {
			t.Errorf("event %+v: want its line, time and a process's lane", ev)
		}
	}
}

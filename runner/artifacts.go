package runner

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/report"
)

// writeArtifacts writes the .hgrm files and plots for what ran, returning
// their names. A failed plot is logged, not fatal: the numbers are in
// results.json either way.
func writeArtifacts(dir string, p Plan, runs []report.Run, hists map[string][3]*hdrhistogram.Histogram, logf func(string, ...any)) []string {
	var files []string
	// hand-off: from a release to the grant to a client already waiting.
	ops := []string{"acquire", "release", "hand-off"}
	clientSet := map[int]bool{}
	for _, r := range runs {
		clientSet[r.Clients] = true
		h := hists[r.Case]
		for i, op := range ops {
			if h[i] == nil || h[i].TotalCount() == 0 {
				continue // no waiter was ever handed the lock (one client)
			}
			name := fmt.Sprintf("%s-%s.hgrm", op, r.Case)
			if err := report.WriteHgrm(filepath.Join(dir, name), h[i]); err != nil {
				logf("warning: %v", err)
				continue
			}
			files = append(files, name)
		}
	}
	var clients []int
	for c := range clientSet {
		clients = append(clients, c)
	}
	sort.Ints(clients)
	for _, c := range clients {
		for i, op := range ops {
			var series []report.Series
			for _, r := range runs {
				if h := hists[r.Case][i]; r.Clients == c && h != nil && h.TotalCount() > 0 {
					label := r.Case
					if p.Kind == "bench" {
						label = r.Approach
					}
					series = append(series, report.Series{Label: label, Hist: h})
				}
			}
			if len(series) == 0 {
				continue
			}
			name := fmt.Sprintf("latency-%s-c%d.png", op, c)
			w := p.Cases[0].Workload
			title := fmt.Sprintf("%s latency, %d client(s), %d key(s), hold %s", op, c, w.Keys, w.Hold)
			if err := report.PlotPercentiles(filepath.Join(dir, name), title, series); err != nil {
				logf("warning: %v", err)
				continue
			}
			files = append(files, name)
		}
	}
	if len(clients) > 1 {
		for _, plot := range []struct {
			name string
			draw func(string, []report.Run) error
		}{{"throughput.png", report.PlotThroughput}, {"latency-vs-clients.png", report.PlotLatencyVsClients}} {
			if err := plot.draw(filepath.Join(dir, plot.name), runs); err != nil {
				logf("warning: %v", err)
				continue
			}
			files = append(files, plot.name)
		}
	}
	return files
}

// writeSummary writes summary.md: the table and each case's verdict in
// words, for humans.
func writeSummary(path, kind string, res *report.Results) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# locklab %s %s\n\n", kind, res.RunID)
	if !res.Complete {
		fmt.Fprintf(&b, "**Incomplete**: %s\n\n", res.Note)
	}
	v := res.Verdict
	fmt.Fprintf(&b, "Verdict: %d case(s) as expected, %d contradicting their expectation, %d undecided; "+
		"%d violation(s) in all (%d double grants), %d case(s) not linearizable.\n\n",
		v.AsExpected, v.Contradicted, v.Undecided, v.Violations, v.DoubleGrants, v.NonLinearizable)
	if m := report.Models(res.Runs); m != "" {
		fmt.Fprintf(&b, "Histories judged under the model %s.\n\n", m)
	}
	stalled := 0
	for _, r := range res.Runs {
		if r.LabStalled {
			stalled++
		}
	}
	if stalled > 0 {
		fmt.Fprintf(&b, "Inconclusive: the lab itself stalled during the events that decide %d case(s), counted undecided.\n\n", stalled)
	}
	b.WriteString("```\n")
	if err := report.PrintTable(&b, res.Runs); err != nil {
		return err
	}
	fmt.Fprintf(&b, "```\n\nAcquire latency counts waiting for the lock; release is one round trip.\n\n")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "## %s\n\n%s: %s.\n", r.Case, r.Status, r.Explanation)
		for _, n := range report.RunNotes(r) {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		if s := report.StallLine(r); s != "" {
			fmt.Fprintf(&b, "- %s\n", s)
		}
		if r.FirstError != "" {
			fmt.Fprintf(&b, "- first error: %s\n", r.FirstError)
		}
		b.WriteString("\n")
	}
	return report.WriteFileAtomic(path, b.Bytes())
}

// WriteSummary writes summary.md for results put together elsewhere: the
// shards of a plan merged (locklab merge).
func WriteSummary(path, kind string, res *report.Results) error { return writeSummary(path, kind, res) }

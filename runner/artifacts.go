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
func writeArtifacts(dir string, cfg BenchConfig, runs []report.Run, hists map[string]map[int][2]*hdrhistogram.Histogram, logf func(string, ...any)) []string {
	var files []string
	ops := []string{"acquire", "release"}
	clientSet := map[int]bool{}
	for _, r := range runs {
		clientSet[r.Clients] = true
		h := hists[r.Backend][r.Clients]
		for i, op := range ops {
			name := fmt.Sprintf("%s-%s-c%d.hgrm", op, r.Backend, r.Clients)
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
				if r.Clients == c {
					series = append(series, report.Series{Label: r.Backend, Hist: hists[r.Backend][c][i]})
				}
			}
			name := fmt.Sprintf("latency-%s-c%d.png", op, c)
			title := fmt.Sprintf("%s latency, %d client(s), %d key(s), hold %s", op, c, cfg.Keys, cfg.Hold)
			if err := report.PlotPercentiles(filepath.Join(dir, name), title, series); err != nil {
				logf("warning: %v", err)
				continue
			}
			files = append(files, name)
		}
	}
	if len(clients) > 1 {
		if err := report.PlotThroughput(filepath.Join(dir, "throughput.png"), runs); err != nil {
			logf("warning: %v", err)
		} else {
			files = append(files, "throughput.png")
		}
	}
	return files
}

// writeSummary writes summary.md: the table and the verdict, for humans.
func writeSummary(path string, res *report.Results) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# locklab bench %s\n\n", res.RunID)
	if !res.Complete {
		fmt.Fprintf(&b, "**Incomplete**: %s\n\n", res.Note)
	}
	verdict := "no double grants"
	if !res.Verdict.Safe {
		verdict = fmt.Sprintf("**%d double grants**", res.Verdict.DoubleGrants)
	}
	fmt.Fprintf(&b, "Verdict: %s.\n\n```\n", verdict)
	if err := report.PrintTable(&b, res.Runs); err != nil {
		return err
	}
	fmt.Fprintf(&b, "```\n\nAcquire latency counts waiting for the lock; release is one round trip.\n")
	for _, r := range res.Runs {
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "- %s c%d: %s\n", r.Backend, r.Clients, v)
		}
		if r.FirstError != "" {
			fmt.Fprintf(&b, "- %s c%d first error: %s\n", r.Backend, r.Clients, r.FirstError)
		}
	}
	return report.WriteFileAtomic(path, b.Bytes())
}

// Package compare sets one run's results beside a baseline's, case by
// case, and says what regressed: the gate CI runs after a bench.
package compare

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
)

// Row is one case found in both results.
type Row struct {
	Case string
	Base report.Run
	New  report.Run
	// Regressions says what got worse beyond the bound, in words.
	Regressions []string
}

// Result is a comparison.
type Result struct {
	Rows []Row
	// OnlyBase and OnlyNew are cases found on one side only.
	OnlyBase, OnlyNew []string
	Bound             float64
	// Versions are the servers (and locklab) whose versions differ between
	// the two: what a comparison of two server versions is about.
	Versions []VersionChange
}

// VersionChange is one component whose version differs.
type VersionChange struct{ Name, Base, New string }

// Regressed reports whether any case regressed.
func (r Result) Regressed() bool {
	for _, row := range r.Rows {
		if len(row.Regressions) > 0 {
			return true
		}
	}
	return false
}

// ByCase is the regressions of each case that has some.
func (r Result) ByCase() map[string][]string {
	m := map[string][]string{}
	for _, row := range r.Rows {
		if len(row.Regressions) > 0 {
			m[row.Case] = row.Regressions
		}
	}
	return m
}

// Compare matches the cases of base and cur by name. A case regressed when
// its throughput fell, or its acquire p99 or hand-off p99 rose, by more
// than bound (0.15 for 15%), or when it shows a safety violation its
// baseline did not. An incomplete case on either side is not compared for
// speed (it ran for a different time), only for safety.
func Compare(base, cur *report.Results, bound float64) Result {
	res := Result{Bound: bound}
	baseRuns := map[string]report.Run{}
	for _, r := range base.Runs {
		baseRuns[r.Case] = r
	}
	seen := map[string]bool{}
	for _, n := range cur.Runs {
		b, ok := baseRuns[n.Case]
		if !ok {
			res.OnlyNew = append(res.OnlyNew, n.Case)
			continue
		}
		seen[n.Case] = true
		res.Rows = append(res.Rows, Row{Case: n.Case, Base: b, New: n, Regressions: regressions(b, n, bound)})
	}
	for _, b := range base.Runs {
		if !seen[b.Case] {
			res.OnlyBase = append(res.OnlyBase, b.Case)
		}
	}
	names := map[string]bool{}
	for k := range base.Versions {
		names[k] = true
	}
	for k := range cur.Versions {
		names[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		if b, n := base.Versions[k], cur.Versions[k]; b != n && b != "" && n != "" {
			res.Versions = append(res.Versions, VersionChange{Name: k, Base: b, New: n})
		}
	}
	return res
}

func regressions(b, n report.Run, bound float64) []string {
	var out []string
	if n.ViolationCount > 0 && b.ViolationCount == 0 {
		out = append(out, fmt.Sprintf("%d safety violation(s), none in the baseline", n.ViolationCount))
	}
	if n.Linearizable == checker.LinNo && b.Linearizable != checker.LinNo {
		out = append(out, "not linearizable, the baseline was")
	}
	if !b.Complete || !n.Complete {
		return out
	}
	if b.AcquiresPerSec > 0 && n.AcquiresPerSec < b.AcquiresPerSec*(1-bound) {
		out = append(out, fmt.Sprintf("throughput %.0f/s, %s below the baseline's %.0f/s",
			n.AcquiresPerSec, pct(1-n.AcquiresPerSec/b.AcquiresPerSec), b.AcquiresPerSec))
	}
	if b.Acquire.P99 > 0 && n.Acquire.P99 > b.Acquire.P99*(1+bound) {
		out = append(out, fmt.Sprintf("acquire p99 %s, %s above the baseline's %s",
			report.FormatMicros(n.Acquire.P99), pct(n.Acquire.P99/b.Acquire.P99-1), report.FormatMicros(b.Acquire.P99)))
	}
	if b.HandOff.P99 > 0 && n.HandOff.P99 > b.HandOff.P99*(1+bound) {
		out = append(out, fmt.Sprintf("hand-off p99 %s, %s above the baseline's %s",
			report.FormatMicros(n.HandOff.P99), pct(n.HandOff.P99/b.HandOff.P99-1), report.FormatMicros(b.HandOff.P99)))
	}
	return out
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

// ParseBound reads a regression bound: "15%" or the fraction "0.15". A
// bare number of 1 or more is refused: "15" is more likely to mean 15%
// than 1500%.
func ParseBound(s string) (float64, error) {
	t, div := strings.TrimSpace(s), 1.0
	if strings.HasSuffix(t, "%") {
		t, div = strings.TrimSuffix(t, "%"), 100
	}
	f, err := strconv.ParseFloat(t, 64)
	switch {
	case err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("%q: want a percentage such as 15%%", s)
	case div == 1 && f >= 1:
		return 0, fmt.Errorf("%q: a fraction must be below 1; for a percentage write %g%%", s, f)
	}
	return f / div, nil
}

// Print writes the comparison table and what regressed.
func Print(w io.Writer, r Result) error {
	for _, v := range r.Versions {
		fmt.Fprintf(w, "%s: %s (baseline: %s)\n", v.Name, v.New, v.Base)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tacquires/s\tbaseline\tchange\tp99\tbaseline\tchange\thand-off p99\tbaseline\tviolations\tbaseline\t")
	for _, row := range r.Rows {
		b, n := row.Base, row.New
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", row.Case,
			n.AcquiresPerSec, b.AcquiresPerSec, change(n.AcquiresPerSec, b.AcquiresPerSec),
			report.FormatMicros(n.Acquire.P99), report.FormatMicros(b.Acquire.P99), change(n.Acquire.P99, b.Acquire.P99),
			report.FormatMicros(n.HandOff.P99), report.FormatMicros(b.HandOff.P99), n.ViolationCount, b.ViolationCount)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, row := range r.Rows {
		for _, reg := range row.Regressions {
			fmt.Fprintf(w, "REGRESSION %s: %s\n", row.Case, reg)
		}
	}
	if len(r.OnlyBase) > 0 {
		fmt.Fprintf(w, "only in the baseline (not compared): %s\n", strings.Join(r.OnlyBase, ", "))
	}
	if len(r.OnlyNew) > 0 {
		fmt.Fprintf(w, "not in the baseline (not compared): %s\n", strings.Join(r.OnlyNew, ", "))
	}
	if !r.Regressed() {
		_, err := fmt.Fprintf(w, "no regression beyond %s in %d case(s)\n", pct(r.Bound), len(r.Rows))
		return err
	}
	return nil
}

func change(n, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.0f%%", (n/b-1)*100)
}

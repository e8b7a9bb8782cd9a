package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/checker"
)

// PrintTable writes the bench table: one row per approach and client count.
// Fairness is Jain's index of the grants per client (1: even); the longest
// stall is the lab's own (Run.LongestStall), beside the latencies it may
// have stretched. The CPU column is the cores locklab and the case's
// servers kept busy while its clients ran (Run.CPU): locklab's own first.
func PrintTable(w io.Writer, runs []Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "approach\tclients\tacquires/s\tp50\tp99\tp99.9\tmax\tlongest stall\thand-off p50\thand-off p99\tfairness\tdouble grants\tother anomalies\tlinearizable\tfailed\tcpu locklab/servers\t")
	for _, r := range runs {
		name := r.Approach
		if !r.Complete {
			name += " (incomplete)"
		}
		fairness := "-"
		if r.Fairness.Jain > 0 {
			fairness = fmt.Sprintf("%.2f", r.Fairness.Jain)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t\n", name, r.Clients, r.AcquiresPerSec,
			FormatMicros(r.Acquire.P50), FormatMicros(r.Acquire.P99), FormatMicros(r.Acquire.P999),
			FormatMicros(r.Acquire.Max), FormatMicros(r.LongestStall*1e6), FormatMicros(r.HandOff.P50), FormatMicros(r.HandOff.P99), fairness, r.DoubleGrants, r.OtherAnomalies(), r.Linearizable, r.Errors+r.Indeterminate, r.Cores())
	}
	return tw.Flush()
}

// Cores is what Run.CPU says as cores kept busy over the run, locklab's and
// the servers' ("0.93/0.41"; "-" for what was not measured).
func (r Run) Cores() string {
	if r.CPU == nil || r.Seconds <= 0 {
		return "-"
	}
	srv := "-"
	if r.CPU.Servers != nil {
		srv = fmt.Sprintf("%.2f", *r.CPU.Servers/r.Seconds)
	}
	return fmt.Sprintf("%.2f/%s", r.CPU.Locklab/r.Seconds, srv)
}

// FormatMicros prints a latency with a unit that keeps 3 significant digits.
func FormatMicros(us float64) string {
	switch {
	case us == 0:
		return "-"
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	case us < 1e6:
		return fmt.Sprintf("%.3gms", us/1e3)
	default:
		return fmt.Sprintf("%.3gs", us/1e6)
	}
}

// PrintRuns prints what a plan's runs showed: the table, each run's
// violations and other findings (RunNotes), each run's verdict in words,
// and the model the histories were judged against.
func PrintRuns(w io.Writer, runs []Run) {
	if len(runs) == 0 {
		return
	}
	PrintTable(w, runs)
	notes := func(run Run) {
		for _, n := range RunNotes(run) {
			fmt.Fprintf(w, "%s: %s\n", run.Case, n)
		}
		if s := StallLine(run); s != "" {
			fmt.Fprintf(w, "%s: %s\n", run.Case, s)
		}
	}
	for _, run := range runs {
		if len(run.Deciding) == 0 {
			notes(run)
		}
	}
	// A contradiction's notes follow its verdict, the deciding incidents
	// first.
	for _, run := range runs {
		fmt.Fprintf(w, "%s: %s: %s\n", run.Case, run.Status, run.Explanation)
		if len(run.Deciding) > 0 {
			notes(run)
		}
	}
	if m := Models(runs); m != "" {
		fmt.Fprintf(w, "model: %s\n", m)
	}
}

// RunNotes are what a run's check found, one line each: its violations,
// its anomalies that are none, and how soon holders learned of a lost lock.
//
// A run that contradicts for what it showed lists the incidents that
// decided it first, every one, then the others' (not its first few
// violations, which may all be of a class it was expected to show).
func RunNotes(r Run) []string {
	notes := append(violationNotes(r), r.Anomalies...)
	if r.LockLoss != nil {
		notes = append(notes, "lock loss: "+r.LockLoss.String())
	}
	return notes
}

// violationNotes are a run's violations in words: a contradiction's
// deciding incidents, every one, then the others'; else its first few
// violations.
func violationNotes(r Run) []string {
	if len(r.Deciding) == 0 {
		return append([]string(nil), r.Violations...)
	}
	var notes []string
	for _, d := range r.Deciding {
		notes = append(notes, "decided by "+d)
	}
	for _, in := range r.Incidents {
		notes = append(notes, "also "+in)
	}
	return notes
}

// Models says which model judged the runs' histories, in words ("" when
// none was checked); several are named one by one.
func Models(runs []Run) string {
	var names []string
	seen := map[checker.Model]bool{}
	for _, r := range runs {
		if r.Model != "" && !seen[r.Model] {
			seen[r.Model] = true
			names = append(names, r.Model.Describe())
		}
	}
	return strings.Join(names, "; ")
}

// StallLine says how often and how long the lab stalled during a run, and
// the first stalls ("" when it never did).
func StallLine(r Run) string {
	if r.StallCount == 0 {
		return ""
	}
	var first []string
	for i, s := range r.Stalls {
		if i == 3 {
			break
		}
		first = append(first, fmt.Sprintf("%s at %.2f s for %.2f s", s.Who, s.At, s.For))
	}
	more := ""
	if r.StallCount > len(first) {
		more = ", ..."
	}
	return fmt.Sprintf("the lab stalled %d time(s), the longest %.2f s (%s%s)", r.StallCount, r.LongestStall, strings.Join(first, "; "), more)
}

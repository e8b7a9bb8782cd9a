package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// PrintTable writes the bench table: one row per backend and client count.
func PrintTable(w io.Writer, runs []Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tclients\tacquires/s\tp50\tp99\tp99.9\tmax\tdouble grants\tother anomalies\tlinearizable\tfailed\t")
	for _, r := range runs {
		name := r.Backend
		if !r.Complete {
			name += " (incomplete)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t\n", name, r.Clients, r.AcquiresPerSec,
			FormatMicros(r.Acquire.P50), FormatMicros(r.Acquire.P99), FormatMicros(r.Acquire.P999),
			FormatMicros(r.Acquire.Max), r.DoubleGrants, r.ViolationCount-r.DoubleGrants, r.Linearizable, r.Errors+r.Indeterminate)
	}
	return tw.Flush()
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

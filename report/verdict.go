package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/checker"
)

// Limits bound how much of a verdict is written out: `locklab check`
// lists more than a case's results keep.
type Limits struct {
	// AllKeys: list every key's linearizability when there are at most
	// this many keys; beyond, only the failing ones and a count.
	AllKeys int
	// Keys: list at most this many keys.
	Keys int
	// Violations: describe at most this many violations.
	Violations int
}

// ViolationLines describe the first l.Violations violations of v, each as
// its class and what happened, then how many more there were.
func ViolationLines(v checker.Verdict, l Limits) []string {
	return violationLines(v, l, func(c checker.Class) string { return string(c) })
}

// violationLines is ViolationLines with each class written by class.
func violationLines(v checker.Verdict, l Limits, class func(checker.Class) string) []string {
	var out []string
	for i, x := range v.Violations {
		if i == l.Violations {
			out = append(out, fmt.Sprintf("... and %d more", len(v.Violations)-i))
			break
		}
		out = append(out, class(x.Kind)+": "+x.Text)
	}
	return out
}

// AddVerdict copies what the checker found into a case's results: the
// counts, the first violations described, and the visualizations of
// failing keys (as paths relative to dir, the results folder).
func (r *Run) AddVerdict(v checker.Verdict, dir string, l Limits) {
	r.DoubleGrants = len(v.DoubleGrants)
	r.ViolationCount = len(v.Violations)
	r.Linearizable = v.Linearizable
	r.RefusedStaleRequests = v.RefusedWrites
	r.ViolationKinds = map[checker.Class]int{}
	for _, x := range v.Violations {
		r.ViolationKinds[x.Kind]++
	}
	r.Violations = append(r.Violations, ViolationLines(v, l)...)
	for _, k := range v.Linear {
		if k.HTML != "" {
			rel, _ := filepath.Rel(dir, k.HTML)
			r.Artifacts = append(r.Artifacts, rel)
		}
	}
}

// WriteVerdict writes v in words, as `locklab check` prints it: a header
// naming what was checked (title), the keys' linearizability, the
// violations, and a last line "verdict: OK" or "verdict: VIOLATION".
func WriteVerdict(w io.Writer, title string, v checker.Verdict, l Limits) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s: %d events, %d keys\n", title, v.Events, v.Keys)
	writeKeys(&b, v.Linear, l)
	// The class in capitals: it stands out of the evidence that follows.
	upper := func(c checker.Class) string { return strings.ToUpper(string(c)) }
	for _, s := range violationLines(v, l, upper) {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	if v.RefusedWrites > 0 {
		fmt.Fprintf(&b, "  the fenced store refused %d stale requests\n", v.RefusedWrites)
	}
	switch {
	case !v.Safe():
		var classes []string
		for k, n := range v.Classes {
			classes = append(classes, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(classes)
		fmt.Fprintf(&b, "verdict: VIOLATION: %s (linearizable: %s)\n", strings.Join(classes, ", "), v.Linearizable)
	case v.Linearizable == checker.LinSkipped:
		fmt.Fprintln(&b, "verdict: OK (no double grant, no resource anomaly; linearizability not checked)")
	default:
		fmt.Fprintln(&b, "verdict: OK (linearizable, no double grant, no resource anomaly)")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeKeys lists the keys' linearizability: every key when there are few,
// only the failing ones when there are many.
func writeKeys(b *bytes.Buffer, keys []checker.KeyResult, l Limits) {
	bad := 0
	for _, r := range keys {
		if r.Result != porcupine.Ok {
			bad++
		}
	}
	many := len(keys) > l.AllKeys
	for i, r := range keys {
		if many && r.Result == porcupine.Ok {
			continue
		}
		if i >= l.Keys {
			fmt.Fprintf(b, "  ... %d more keys\n", len(keys)-i)
			break
		}
		switch r.Result {
		case porcupine.Ok:
			fmt.Fprintf(b, "  key %s: linearizable (%d operations, %v)\n", r.Key, r.Ops, r.Took.Round(time.Microsecond))
		case porcupine.Illegal:
			fmt.Fprintf(b, "  key %s: NOT linearizable (%d operations)", r.Key, r.Ops)
			if r.HTML != "" {
				fmt.Fprintf(b, ": see %s", r.HTML)
			}
			fmt.Fprintln(b)
		default:
			fmt.Fprintf(b, "  key %s: unknown (time limit hit after %v, %d operations)\n", r.Key, r.Took.Round(time.Millisecond), r.Ops)
		}
	}
	if many {
		fmt.Fprintf(b, "  %d of %d keys linearizable\n", len(keys)-bad, len(keys))
	}
}

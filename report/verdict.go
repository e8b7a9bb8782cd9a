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
	return describedLines(v.Violations, l, plainClass)
}

// AnomalyLines describe v's anomalies that are no violations as
// ViolationLines does its violations.
func AnomalyLines(v checker.Verdict, l Limits) []string {
	return describedLines(v.Anomalies, l, plainClass)
}

func plainClass(c checker.Class) string { return string(c) }

// describedLines describes the first l.Violations of xs, each class written
// by class.
func describedLines(xs []checker.Violation, l Limits, class func(checker.Class) string) []string {
	var out []string
	for i, x := range xs {
		if i == l.Violations {
			out = append(out, fmt.Sprintf("... and %d more", len(xs)-i))
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
	r.Model = v.Model
	r.DoubleGrants = len(v.DoubleGrants)
	r.ViolationCount = len(v.Violations)
	r.Linearizable = v.Linearizable
	r.RefusedStaleRequests = v.RefusedWrites
	r.ViolationKinds = map[checker.Class]int{}
	for _, x := range v.Violations {
		r.ViolationKinds[x.Kind]++
		if x.Mechanism != "" {
			if r.Mechanisms == nil {
				r.Mechanisms = map[string]int{}
			}
			r.Mechanisms[x.Mechanism]++
		}
	}
	r.Violations = append(r.Violations, ViolationLines(v, l)...)
	r.AnomalyCount = len(v.Anomalies)
	if len(v.Anomalies) > 0 {
		r.AnomalyKinds = map[checker.Class]int{}
		for _, x := range v.Anomalies {
			r.AnomalyKinds[x.Kind]++
		}
	}
	r.Anomalies = append(r.Anomalies, AnomalyLines(v, l)...)
	r.LockLoss = lockLoss(v.LockLoss)
	for _, k := range v.Linear {
		if k.HTML != "" {
			rel, _ := filepath.Rel(dir, k.HTML)
			r.Artifacts = append(r.Artifacts, rel)
		}
	}
}

// WriteVerdict writes v in words, as `locklab check` prints it: a header
// naming what was checked (title) and the model it was judged against, the
// keys' linearizability, the violations, the anomalies that are none, how
// soon holders learned of a lost lock, and a last line "verdict: OK" or
// "verdict: VIOLATION".
func WriteVerdict(w io.Writer, title string, v checker.Verdict, l Limits) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s: %d events, %d keys\n", title, v.Events, v.Keys)
	fmt.Fprintf(&b, "model: %s\n", v.Model.Describe())
	writeKeys(&b, v.Linear, l)
	// The class in capitals: it stands out of the evidence that follows.
	upper := func(c checker.Class) string { return strings.ToUpper(string(c)) }
	for _, s := range describedLines(v.Violations, l, upper) {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	for _, s := range describedLines(v.Anomalies, l, upper) {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	if v.RefusedWrites > 0 {
		fmt.Fprintf(&b, "  the fenced store refused %d stale requests\n", v.RefusedWrites)
	}
	if loss := lockLoss(v.LockLoss); loss != nil {
		fmt.Fprintf(&b, "  lock loss: %s\n", loss)
	}
	also := ""
	if len(v.Anomalies) > 0 {
		also = fmt.Sprintf("; %s, no violation", countClasses(v.Anomalies))
	}
	switch {
	case !v.Safe():
		fmt.Fprintf(&b, "verdict: VIOLATION: %s (linearizable: %s%s)\n", countClasses(v.Violations), v.Linearizable, also)
	case v.Linearizable == checker.LinSkipped:
		fmt.Fprintf(&b, "verdict: OK (no double grant, no resource anomaly; linearizability not checked%s)\n", also)
	default:
		fmt.Fprintf(&b, "verdict: OK (linearizable, no double grant, no resource anomaly%s)\n", also)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// countClasses says how many of xs there are of each class: "2 lost
// update, 1 stale write".
func countClasses(xs []checker.Violation) string {
	n := map[checker.Class]int{}
	for _, x := range xs {
		n[x.Kind]++
	}
	var classes []string
	for k, c := range n {
		classes = append(classes, fmt.Sprintf("%d %s", c, k))
	}
	sort.Strings(classes)
	return strings.Join(classes, ", ")
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
		key := "key " + r.Key
		if r.Key == "" {
			key = "the lock" // Jepsen's histories of one lock name none
		}
		switch r.Result {
		case porcupine.Ok:
			fmt.Fprintf(b, "  %s: linearizable (%d operations, %v)\n", key, r.Ops, r.Took.Round(time.Microsecond))
		case porcupine.Illegal:
			fmt.Fprintf(b, "  %s: NOT linearizable (%d operations)", key, r.Ops)
			if r.HTML != "" {
				fmt.Fprintf(b, ": see %s", r.HTML)
			}
			fmt.Fprintln(b)
		default:
			fmt.Fprintf(b, "  %s: unknown (time limit hit after %v, %d operations)\n", key, r.Took.Round(time.Millisecond), r.Ops)
		}
	}
	if many {
		fmt.Fprintf(b, "  %d of %d keys linearizable\n", len(keys)-bad, len(keys))
	}
}

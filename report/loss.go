package report

import (
	"fmt"
	"slices"

	"github.com/locklab/locklab/checker"
)

// maxLossSamples bounds the lock-loss latencies a case's results keep: a
// loss comes with a fault, so a case has a few; a long bench stays small.
const maxLossSamples = 1000

// LockLoss is how soon holders learned that their lock had been taken
// away, where the lock can tell them (a lost signal, an extend answered
// "not held"): from the server freeing the lock (the next grant to another
// client, or the lease's end as the holder believed it, whichever first)
// to the holder being told. Negative: told before the lock was freed.
type LockLoss struct {
	Told    int `json:"told"`     // holders told
	NotTold int `json:"not_told"` // holders whose lock was taken away with no signal first
	// Samples are the latencies, sorted; Median, Min and Max read off
	// them (absent when no holder was told).
	Samples []float64 `json:"latencies_s,omitempty"`
	Median  float64   `json:"median_s,omitempty"`
	Min     float64   `json:"min_s,omitempty"`
	Max     float64   `json:"max_s,omitempty"`
}

// lockLoss summarises what the checker measured; nil when no holder was
// told or taken away.
func lockLoss(l checker.LockLoss) *LockLoss {
	if len(l.Told) == 0 && l.NotTold == 0 {
		return nil
	}
	s := make([]float64, 0, min(len(l.Told), maxLossSamples))
	for _, x := range l.Told[:min(len(l.Told), maxLossSamples)] {
		s = append(s, x.Latency.Seconds())
	}
	return mergeLoss(&LockLoss{Told: len(l.Told), NotTold: l.NotTold, Samples: s})
}

// MergeLockLoss adds up the lock losses of several runs (a matrix cell's);
// nil when none had any.
func MergeLockLoss(ls ...*LockLoss) *LockLoss {
	var out LockLoss
	some := false
	for _, l := range ls {
		if l == nil {
			continue
		}
		some = true
		out.Told += l.Told
		out.NotTold += l.NotTold
		out.Samples = append(out.Samples, l.Samples...)
	}
	if !some {
		return nil
	}
	return mergeLoss(&out)
}

// mergeLoss sorts l's samples and reads its median and range off them.
func mergeLoss(l *LockLoss) *LockLoss {
	slices.Sort(l.Samples)
	if n := len(l.Samples); n > 0 {
		l.Median, l.Min, l.Max = l.Samples[n/2], l.Samples[0], l.Samples[n-1]
	}
	return l
}

// String says it in one line, e.g. "3 holders told 0.300 s after the
// server freed the lock (median; from 0.100 s before to 1.200 s after);
// 1 more lost it untold".
func (l *LockLoss) String() string {
	if l == nil {
		return "no lock taken away"
	}
	var s string
	switch len(l.Samples) {
	case 0:
		return fmt.Sprintf("%d %s lost the lock untold", l.NotTold, plural(l.NotTold, "holder", "holders"))
	case 1:
		s = fmt.Sprintf("1 holder told %s the server freed the lock", relative(l.Median))
	default:
		s = fmt.Sprintf("%d holders told %s the server freed the lock (median; from %s to %s)", l.Told,
			relative(l.Median), relative(l.Min), relative(l.Max))
	}
	if l.NotTold > 0 {
		s += fmt.Sprintf("; %d more lost it untold", l.NotTold)
	}
	return s
}

// relative says a signed latency in seconds as before or after.
func relative(s float64) string {
	if s < 0 {
		return fmt.Sprintf("%.3f s before", -s)
	}
	return fmt.Sprintf("%.3f s after", s)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

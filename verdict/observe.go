package verdict

import (
	"strings"

	"github.com/locklab/locklab/checker"
)

// Liveness is what the runner measured about progress, beside safety.
type Liveness struct {
	// Blocked: clients kept asking but nobody was granted the lock in the
	// case's last stretch (after its last fault), as after a crashed holder
	// whose lock never expires.
	Blocked bool
	// Unavailable counts operations the lock service refused to serve.
	Unavailable int64
	// NothingGranted: no client was granted the lock in the whole case,
	// so mutual exclusion was never exercised.
	NothingGranted bool
}

// Observe turns a checker verdict into outcomes. checked=false means
// nothing was recorded, so nothing can be said about safety.
func Observe(v checker.Verdict, checked bool, l Liveness) Observed {
	o := Observed{Counts: map[Outcome]int{}, Checked: checked, NothingGranted: l.NothingGranted}
	if !checked {
		return o
	}
	for _, x := range v.Violations {
		o.Counts[classify(x.Kind)]++
	}
	if v.RefusedWrites > 0 {
		o.Counts[StaleWriteRefused] += v.RefusedWrites
	}
	switch v.Linearizable {
	case "no":
		if len(o.Unsafe()) == 0 {
			o.Counts[NonLinearizable]++
		}
	case "unknown":
		o.Undecided = true
	}
	if l.Blocked {
		o.Counts[Blocked]++
	}
	if l.Unavailable > 0 {
		o.Counts[Unavailable] += int(l.Unavailable)
	}
	return o
}

// classify maps the checker's violation kinds onto outcomes.
func classify(kind string) Outcome {
	switch {
	case strings.Contains(kind, checker.OutlivedLease):
		return DoubleGrantOutlived
	case strings.Contains(kind, checker.BothValid):
		return DoubleGrantBothValid
	case strings.HasPrefix(kind, "double grant"):
		return DoubleGrant
	case kind == checker.LostUpdate:
		return LostUpdate
	case kind == checker.StaleWrite:
		return StaleWrite
	case kind == checker.DuplicateTask:
		return TaskTwice
	case kind == checker.TokenRegressed:
		return TokenRegressed
	case strings.Contains(kind, "revoked"):
		return Revoked
	case strings.Contains(kind, "phantom"):
		return PhantomRelease
	case strings.Contains(kind, "never granted"):
		return NeverGranted
	}
	return NonLinearizable
}

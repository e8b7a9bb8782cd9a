package verdict

import "github.com/locklab/locklab/checker"

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
	if v.Linearizable == checker.LinNo && len(o.Unsafe()) == 0 {
		o.Counts[NonLinearizable]++
	}
	if l.Blocked {
		o.Counts[Blocked]++
	}
	if l.Unavailable > 0 {
		o.Counts[Unavailable] += int(l.Unavailable)
	}
	return o
}

// classes maps each class of violation the checker finds onto its
// outcome. A class missing here (a checker newer than this table) counts as
// non-linearizable: unsafe, with no finer name.
var classes = map[checker.Class]Outcome{
	checker.DoubleGrantOutlived:  DoubleGrantOutlived,
	checker.DoubleGrantBothValid: DoubleGrantBothValid,
	// No lease on either side: the service broke mutual exclusion all the
	// same.
	checker.DoubleGrantHeldAtOnce: DoubleGrantBothValid,
	// The mutex model's: no lease to have outlived, nor one valid.
	checker.DoubleGrantNeverReleased: DoubleGrant,
	checker.Revoked:                  Revoked,
	checker.PhantomRelease:           PhantomRelease,
	checker.LostUpdate:               LostUpdate,
	checker.StaleWrite:               StaleWrite,
	checker.DuplicateTask:            TaskTwice,
	checker.TokenRegressed:           TokenRegressed,
	checker.RenewedAfterRelease:      RenewedAfterRelease,
}

// classify maps a checker's violation class onto an outcome.
func classify(c checker.Class) Outcome {
	if o, ok := classes[c]; ok {
		return o
	}
	return NonLinearizable
}

// OutcomeOf is the outcome a class of violation the checker finds counts
// as (non-linearizable for a class this table does not know yet).
func OutcomeOf(c checker.Class) Outcome { return classify(c) }

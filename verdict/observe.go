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
	// Unrecovered: the servers failed their health check after every
	// fault was healed.
	Unrecovered bool
}

// Observe turns a checker verdict into outcomes. checked=false means
// nothing was recorded, so nothing can be said about safety.
func Observe(v checker.Verdict, checked bool, l Liveness) Observed {
	o := Observed{Counts: map[Outcome]int{}, Checked: checked, NothingGranted: l.NothingGranted}
	if !checked {
		return o
	}
	for _, x := range v.Violations {
		o.Counts[OutcomeOf(x.Kind)]++
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
	if l.Unrecovered {
		o.Counts[Unrecovered]++
	}
	if l.Unavailable > 0 {
		o.Counts[Unavailable] += int(l.Unavailable)
	}
	return o
}

package history

import "fmt"

// Sequence checks, event by event, that no completion of an operation
// comes earlier in time than the invoke of the same operation by the same
// process before it. Time running backwards is a broken history (clocks
// mixed up, lines reordered), not something the lock did: the checker
// would otherwise report it as a violation. A completion without an invoke
// is accepted (hand-written histories and some exporters leave invokes
// out; the checker takes it as instantaneous). Only lock operations are checked: fault events, lost and
// crash events, and the reads and writes of a guarded resource (recorded
// as completions only) have no invoke of their own.
type Sequence struct {
	open map[procOp]int64 // invoke time of each operation in flight
	n    int
}

type procOp struct {
	proc int
	f    string
}

// Check takes the next event in history order.
func (s *Sequence) Check(ev Event) error {
	s.n++
	switch ev.F {
	case Acquire, Release, Extend:
	case Crash: // whatever it had in flight stays pending for ever
		for k := range s.open {
			if k.proc == ev.Proc {
				delete(s.open, k)
			}
		}
		return nil
	default:
		return nil
	}
	if s.open == nil {
		s.open = map[procOp]int64{}
	}
	k := procOp{ev.Proc, ev.F}
	if ev.Type == Invoke {
		s.open[k] = ev.T
		return nil
	}
	at, ok := s.open[k]
	if !ok {
		return nil // a completion alone: the checker takes it as instantaneous
	}
	if ev.T < at {
		return fmt.Errorf("event %d: %s %s of process %d at t=%d, before its invoke at t=%d (time runs backwards)", s.n, ev.Type, ev.F, ev.Proc, ev.T, at)
	}
	delete(s.open, k)
	return nil
}

package checker

import (
	"testing"

	"github.com/locklab/locklab/history"
)

// reentry marks a hand-written acquire event as a re-entry.
func reentry(e history.Event) history.Event {
	e.Reentry = true
	return e
}

// Re-entry read under each model: a holder's re-entries are given back by
// as many releases before the one that ends its tenure, and a lock that
// frees the key at a re-entry's release grants it twice.
func TestReentry(t *testing.T) {
	inv, ok, fail, info := history.Invoke, history.OK, history.Fail, history.Info
	tests := []struct {
		name       string
		evs        []history.Event
		mutex      int // double grants under the mutex model
		lease      int // under the lease model
		linearOps  int // operations the linearizability drawing keeps (re-entries left out)
		wantTenure [2]int64
	}{
		{"re-entered, given back, then released: one tenure", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10),
			reentry(ev(1, inv, A, "k", 20)), reentry(ev(1, ok, A, "k", 22)),
			ev(1, inv, R, "k", 30), ev(1, ok, R, "k", 32),
			ev(2, inv, A, "k", 25), ev(1, inv, R, "k", 40), ev(1, ok, R, "k", 42), ev(2, ok, A, "k", 45),
		}, 0, 0, 3, [2]int64{10, 40}},
		{"the re-entry's release freed the key: granted to another while held", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10),
			reentry(ev(1, inv, A, "k", 20)), reentry(ev(1, ok, A, "k", 22)),
			ev(1, inv, R, "k", 30), ev(1, ok, R, "k", 32),
			ev(2, inv, A, "k", 25), ev(2, ok, A, "k", 34), ev(1, inv, R, "k", 40), ev(1, ok, R, "k", 42),
		}, 1, 1, 3, [2]int64{10, 40}},
		{"a grant to the holder that is no re-entry", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10), ev(1, inv, A, "k", 20), ev(1, ok, A, "k", 22),
			ev(1, inv, R, "k", 30), ev(1, ok, R, "k", 32),
		}, 1, 0, 3, [2]int64{10, 30}},
		{"a re-entry's release refused: under the mutex model it never happened", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10),
			reentry(ev(1, inv, A, "k", 20)), reentry(ev(1, ok, A, "k", 22)),
			ev(1, inv, R, "k", 30), history.Event{Proc: 1, Type: fail, F: R, Key: "k", T: 32, Error: "not held"},
			ev(1, inv, R, "k", 40), ev(1, ok, R, "k", 42), ev(2, inv, A, "k", 41), ev(2, ok, A, "k", 45),
		}, 1, 0, 3, [2]int64{10, 40}},
		{"a re-entry's release unanswered: it may have happened", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10),
			reentry(ev(1, inv, A, "k", 20)), reentry(ev(1, ok, A, "k", 22)),
			ev(1, inv, R, "k", 30), ev(1, inv, R, "k", 40), ev(1, ok, R, "k", 42), ev(2, inv, A, "k", 41), ev(2, ok, A, "k", 45),
		}, 0, 0, 3, [2]int64{10, 40}},
		{"a crash after a re-entry ends the lease's tenure", []history.Event{
			ev(1, inv, A, "k", 0), ev(1, ok, A, "k", 10),
			reentry(ev(1, inv, A, "k", 20)), reentry(ev(1, ok, A, "k", 22)),
			{Proc: 1, Type: info, F: history.Crash, T: 30}, ev(2, inv, A, "k", 31), ev(2, ok, A, "k", 35),
		}, 1, 0, 3, [2]int64{10, 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				model Model
				want  int
			}{{ModelMutex, tt.mutex}, {ModelLease, tt.lease}} {
				m, l := NewMutex(c.model), NewLinear(c.model)
				for i, e := range tt.evs {
					e.Index = int64(i)
					m.Add(e)
					l.Add(e)
				}
				if got := len(m.DoubleGrants()); got != c.want {
					t.Errorf("%s model: %d double grants, want %d: %v", c.model, got, c.want, m.DoubleGrants())
				}
				if c.model == ModelLease {
					if got := m.Intervals()["k"][0]; [2]int64{got.Start, got.End} != tt.wantTenure {
						t.Errorf("process 1's tenure is [%d, %d], want %v", got.Start, got.End, tt.wantTenure)
					}
					ops := len(l.ops["k"])
					for pk := range l.pending {
						if pk.key == "k" {
							ops++
						}
					}
					if ops != tt.linearOps {
						t.Errorf("the drawing keeps %d operations, want %d", ops, tt.linearOps)
					}
				}
			}
		})
	}
}

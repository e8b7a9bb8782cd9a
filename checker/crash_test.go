package checker

import (
	"context"
	"testing"

	"github.com/locklab/locklab/history"
)

// A holder that crashed does nothing more: the server may free its lock
// at any time after the crash (or never), so a later grant to another
// client is no double grant, and the history stays linearizable. A grant
// before the crash still is one.
func TestCrashedHolderEndsItsTenure(t *testing.T) {
	ev := func(i int64, proc int, typ history.Type, f string, t int64) history.Event {
		return history.Event{Index: i, Proc: proc, Type: typ, F: f, Key: "k", T: t}
	}
	tests := []struct {
		name   string
		events []history.Event
		grants int
		linear LinStatus
	}{
		{"granted after the crash", []history.Event{
			ev(0, 0, history.Invoke, history.Acquire, 1), ev(1, 0, history.OK, history.Acquire, 2),
			ev(2, 1, history.Invoke, history.Acquire, 3),
			{Index: 3, Proc: 0, Type: history.Info, F: history.Crash, T: 4},
			ev(4, 1, history.OK, history.Acquire, 10),
			ev(5, 1, history.Invoke, history.Release, 11), ev(6, 1, history.OK, history.Release, 12),
		}, 0, "yes"},
		{"granted before the crash", []history.Event{
			ev(0, 0, history.Invoke, history.Acquire, 1), ev(1, 0, history.OK, history.Acquire, 2),
			ev(2, 1, history.Invoke, history.Acquire, 3), ev(3, 1, history.OK, history.Acquire, 4),
			{Index: 4, Proc: 0, Type: history.Info, F: history.Crash, T: 5},
		}, 1, "no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(ModelLease, true)
			for _, e := range tt.events {
				c.Add(e)
			}
			v, err := c.Verdict(context.Background(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(v.DoubleGrants) != tt.grants || v.Linearizable != tt.linear {
				t.Fatalf("double grants %d, linearizable %s; want %d, %s", len(v.DoubleGrants), v.Linearizable, tt.grants, tt.linear)
			}
		})
	}
}

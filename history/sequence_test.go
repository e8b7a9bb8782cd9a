package history

import (
	"strings"
	"testing"
)

func TestSequence(t *testing.T) {
	inv := func(p int, f string, at int64) Event { return Event{Proc: p, Type: Invoke, F: f, T: at} }
	done := func(p int, typ Type, f string, at int64) Event { return Event{Proc: p, Type: typ, F: f, T: at} }
	for _, tc := range []struct {
		name   string
		events []Event
		want   string // substring of the error; "" for none
	}{
		{"paired", []Event{inv(1, Acquire, 1), done(1, OK, Acquire, 2), inv(1, Release, 3), done(1, OK, Release, 3)}, ""},
		{"concurrent processes", []Event{inv(1, Acquire, 1), inv(2, Acquire, 2), done(2, Fail, Acquire, 3), done(1, Info, Acquire, 4)}, ""},
		{"renewal beside the holder's next call", []Event{inv(1, Extend, 1), inv(1, Release, 2), done(1, OK, Release, 3), done(1, OK, Extend, 4)}, ""},
		{"lost, crash and faults need no invoke", []Event{done(1, Info, Lost, 1), done(2, Info, Crash, 2), done(-1, Info, Nemesis, 3), done(1, OK, Read, 4), done(1, OK, Write, 5)}, ""},
		{"ok before its invoke in time", []Event{inv(1, Acquire, 5), done(1, OK, Acquire, 4)}, "event 2: ok acquire of process 1 at t=4, before its invoke at t=5"},
		{"ok with no invoke", []Event{done(3, OK, Acquire, 4)}, ""},
		{"the next invoke is compared, not the first", []Event{inv(1, Acquire, 1), done(1, OK, Acquire, 2), inv(1, Acquire, 10), done(1, OK, Acquire, 9)}, "event 4: ok acquire of process 1 at t=9, before its invoke at t=10"},
		{"a crash ends what was in flight", []Event{inv(1, Acquire, 10), done(1, Info, Crash, 11), done(1, OK, Acquire, 3)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Sequence
			var err error
			for _, ev := range tc.events {
				if err = s.Check(ev); err != nil {
					break
				}
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

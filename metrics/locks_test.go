package metrics

import (
	"math"
	"slices"
	"testing"

	"github.com/locklab/locklab/history"
)

func ev(proc int, typ history.Type, f string, t int64) history.Event {
	return history.Event{Proc: proc, Type: typ, F: f, Key: "k", T: t}
}

func TestHandOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []history.Event
		want   []int64 // hand-off samples, ns
	}{
		{
			name: "waiter granted 5 after the release answered",
			events: []history.Event{
				ev(1, history.Invoke, history.Acquire, 0), ev(1, history.OK, history.Acquire, 10),
				ev(2, history.Invoke, history.Acquire, 20),
				ev(1, history.Invoke, history.Release, 30), ev(1, history.OK, history.Release, 40),
				ev(2, history.OK, history.Acquire, 45),
			},
			want: []int64{5},
		},
		{
			name: "the grant's event arrives before the release's answer",
			events: []history.Event{
				ev(1, history.Invoke, history.Acquire, 0), ev(1, history.OK, history.Acquire, 10),
				ev(2, history.Invoke, history.Acquire, 20),
				ev(1, history.Invoke, history.Release, 30),
				ev(2, history.OK, history.Acquire, 60), ev(1, history.OK, history.Release, 50),
			},
			want: []int64{10},
		},
		{
			name: "granted before the releaser heard back: instant",
			events: []history.Event{
				ev(1, history.Invoke, history.Acquire, 0), ev(1, history.OK, history.Acquire, 10),
				ev(2, history.Invoke, history.Acquire, 20),
				ev(1, history.Invoke, history.Release, 30), ev(2, history.OK, history.Acquire, 35),
				ev(1, history.OK, history.Release, 40),
			},
			want: []int64{1},
		},
		{
			name: "nobody waiting: an idle lock is no hand-off",
			events: []history.Event{
				ev(1, history.Invoke, history.Acquire, 0), ev(1, history.OK, history.Acquire, 10),
				ev(1, history.Invoke, history.Release, 30), ev(1, history.OK, history.Release, 40),
				ev(2, history.Invoke, history.Acquire, 50), ev(2, history.OK, history.Acquire, 55),
				ev(2, history.Invoke, history.Release, 60), ev(2, history.OK, history.Release, 70),
			},
			want: nil,
		},
		{
			// A history stamped to the microsecond: the holder's release
			// invoked in the microsecond its grant was answered is its own
			// grant, never a hand-off to itself.
			name: "one client, grant and release in the same microsecond",
			events: []history.Event{
				ev(1, history.Invoke, history.Acquire, 0), ev(1, history.OK, history.Acquire, 10),
				ev(1, history.Invoke, history.Release, 10), ev(1, history.OK, history.Release, 20),
				ev(1, history.Invoke, history.Acquire, 20), ev(1, history.OK, history.Acquire, 30),
				ev(1, history.Invoke, history.Release, 30), ev(1, history.OK, history.Release, 40),
			},
			want: nil,
		},
		{
			name: "a waiter granted in the microsecond the release was sent did not get that release's lock",
			events: []history.Event{
				ev(1, history.Invoke, history.Acquire, 0), ev(1, history.OK, history.Acquire, 10),
				ev(2, history.Invoke, history.Acquire, 20),
				ev(1, history.Invoke, history.Release, 30), ev(2, history.OK, history.Acquire, 30),
				ev(1, history.OK, history.Release, 40),
			},
			want: nil,
		},
		{
			name: "one release hands off once",
			events: []history.Event{
				ev(1, history.Invoke, history.Acquire, 0), ev(1, history.OK, history.Acquire, 10),
				ev(2, history.Invoke, history.Acquire, 20), ev(3, history.Invoke, history.Acquire, 21),
				ev(1, history.Invoke, history.Release, 30), ev(1, history.OK, history.Release, 40),
				ev(2, history.OK, history.Acquire, 45),
				ev(2, history.Invoke, history.Release, 50), ev(2, history.OK, history.Release, 60),
				ev(3, history.OK, history.Acquire, 80),
			},
			want: []int64{5, 20},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewLocks()
			for _, e := range tc.events {
				m.Observe(e)
			}
			h := m.HandOff()
			if h.TotalCount() != int64(len(tc.want)) {
				t.Fatalf("%d hand-offs, want %v", h.TotalCount(), tc.want)
			}
			if len(tc.want) > 0 && (h.Min() != slices.Min(tc.want) || h.Max() != slices.Max(tc.want)) {
				t.Errorf("hand-offs from %d to %d ns, want %v", h.Min(), h.Max(), tc.want)
			}
		})
	}
}

func TestFairness(t *testing.T) {
	grants := func(counts map[int]int, waits int64) *Locks {
		m := NewLocks()
		var t int64
		for p, n := range counts {
			m.Observe(ev(p, history.Invoke, history.Acquire, t))
			for i := 0; i < n; i++ {
				if i > 0 {
					m.Observe(ev(p, history.Invoke, history.Acquire, t))
				}
				t += waits
				m.Observe(ev(p, history.OK, history.Acquire, t))
			}
			if n == 0 {
				t += 3 * waits
				m.Observe(ev(p, history.Fail, history.Acquire, t))
			}
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		counts      map[int]int
		jain, minSh float64
		longestUs   float64
	}{
		{"even", map[int]int{1: 10, 2: 10, 3: 10, 4: 10}, 1, 0.25, 1},
		{"one takes all", map[int]int{1: 10, 2: 0, 3: 0, 4: 0}, 0.25, 0, 3},
		{"two to one", map[int]int{1: 20, 2: 10}, 900.0 / 1000, 1.0 / 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := grants(tc.counts, 1000).Fairness()
			if f.Clients != len(tc.counts) || math.Abs(f.Jain-tc.jain) > 1e-9 || math.Abs(f.MinShare-tc.minSh) > 1e-9 || f.LongestWaitUs != tc.longestUs {
				t.Fatalf("got %+v, want jain %v min share %v longest %v µs", f, tc.jain, tc.minSh, tc.longestUs)
			}
		})
	}
	if f := NewLocks().Fairness(); f.Clients != 0 || f.Jain != 0 || math.IsInf(f.MinShare, 0) {
		t.Fatalf("empty: %+v", f)
	}
}

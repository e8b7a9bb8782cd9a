package stall

import (
	"context"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/starve"
)

func TestLongestWait(t *testing.T) {
	const ms = uint64(time.Millisecond)
	now := int64(10 * time.Second)
	// one is a thread that ran once since the last look.
	one := func(prev, cur uint64) (sched, sched) {
		return sched{wait: prev, slices: 7}, sched{wait: cur, slices: 8}
	}
	p1, c1 := one(5*ms, 5*ms)
	p2, c2 := one(5*ms, 60*ms)
	p3, c3 := one(5*ms, 105*ms)
	p4, c4 := one(0, 150*ms)
	p5, c5 := one(0, 400*ms)
	for _, tt := range []struct {
		name      string
		prev, cur map[int]sched
		since     time.Duration // between the looks
		want      time.Duration // 0: no stall
		asleep    map[int]int64 // tid -> the last look that saw it asleep
	}{
		{"no wait", map[int]sched{1: p1}, map[int]sched{1: c1}, 50 * time.Millisecond, 0, nil},
		{"a short wait", map[int]sched{1: p2}, map[int]sched{1: c2}, 50 * time.Millisecond, 0, nil},
		{"a wait at the threshold", map[int]sched{1: p3}, map[int]sched{1: c3}, 50 * time.Millisecond, 100 * time.Millisecond, nil},
		{"the longest thread's", map[int]sched{1: p4, 2: p5}, map[int]sched{1: c4, 2: c5}, 50 * time.Millisecond, 400 * time.Millisecond, nil},
		{"a thread first seen says nothing", map[int]sched{1: {wait: 0, slices: 1}}, map[int]sched{1: {wait: 0, slices: 1}, 2: {wait: 900 * ms, slices: 9}}, 50 * time.Millisecond, 0, nil},
		{"a thread gone", map[int]sched{1: {wait: 0, slices: 1}, 2: {wait: 0, slices: 1}}, map[int]sched{1: {wait: 0, slices: 1}}, 50 * time.Millisecond, 0, nil},
		{"one long wait seen late is all one wait", map[int]sched{1: {wait: 0, slices: 3}}, map[int]sched{1: {wait: 18 * uint64(time.Second), slices: 4}}, 20 * time.Second, 18 * time.Second, nil},
		{"many short waits between looks far apart are no stall", map[int]sched{1: {wait: 0, slices: 3}}, map[int]sched{1: {wait: 18 * uint64(time.Second), slices: 3003}}, 20 * time.Second, 0, nil},
		{"many waits: the longest at least the growth less the interval", map[int]sched{1: {wait: 0, slices: 3}}, map[int]sched{1: {wait: 900 * ms, slices: 13}}, 50 * time.Millisecond, 850 * time.Millisecond, nil},
		{"two waits: the longest at least half the growth", map[int]sched{1: {wait: 0, slices: 3}}, map[int]sched{1: {wait: 400 * ms, slices: 5}}, time.Second, 200 * time.Millisecond, nil},
		{"a thread seen asleep at the last look waited since then at most", map[int]sched{1: {wait: 0, slices: 3}}, map[int]sched{1: {wait: 3 * uint64(time.Second), slices: 4}}, 50 * time.Millisecond, 0,
			map[int]int64{1: now - int64(50*time.Millisecond)}},
		{"a thread seen asleep 2 s ago waited 2 s at most", map[int]sched{1: {wait: 0, slices: 3}}, map[int]sched{1: {wait: 3 * uint64(time.Second), slices: 4}}, 50 * time.Millisecond, 2 * time.Second,
			map[int]int64{1: now - int64(2*time.Second)}},
		{"another thread asleep says nothing of this one", map[int]sched{1: {wait: 0, slices: 3}}, map[int]sched{1: {wait: 3 * uint64(time.Second), slices: 4}}, 50 * time.Millisecond, 3 * time.Second,
			map[int]int64{2: now - int64(50*time.Millisecond)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := longestWait(tt.prev, tt.cur, tt.asleep, tt.since, now, 100*time.Millisecond)
			if ok != (tt.want > 0) || ok && (s.End != now || s.Duration() != tt.want) {
				t.Fatalf("longestWait = %+v (%v), %v; want %v ending now", s, s.Duration(), ok, tt.want)
			}
		})
	}
}

func TestParseSchedstat(t *testing.T) {
	for in, want := range map[string]sched{"123 4567 8\n": {wait: 4567, slices: 8}, "1 2 3": {wait: 2, slices: 3}, "9": {}, "": {}, "1 x 3": {}, "1 2": {}, "1 2 y": {}} {
		w, ok := parseSchedstat([]byte(in))
		if ok != (want != sched{}) || w != want && ok {
			t.Errorf("parseSchedstat(%q) = %v, %v; want %v", in, w, ok, want)
		}
	}
}

// A busy process starved of its CPU (moved into a cgroup allowed 1 ms a
// second) waits on the run queue: the watch's stalls cover most of the
// starvation. How many spans they come in is the scheduler's: under load
// the quota's millisecond is spent in several slices, each ending a wait
// (1 s seen as 0.11, 0.40 and 0.40 s with two busy loops beside it).
func TestRunqueueSeesAStarvedProcess(t *testing.T) {
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	var mu sync.Mutex
	var got []Span
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Runqueue{Period: 20 * time.Millisecond}.Run(ctx, now,
			func() map[string][]int { return map[string][]int{"busy": {busy.Process.Pid}} },
			func(who string, s Span) {
				mu.Lock()
				got = append(got, s)
				mu.Unlock()
			})
	}()
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	alone := len(got)
	mu.Unlock()
	const starved = time.Second
	from := now()
	starve.CPU(t, []int{busy.Process.Pid}, starved)
	to := now()
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	if alone > 0 {
		t.Logf("%d stall(s) before the starvation (a loaded machine)", alone)
	}
	t.Logf("stalls after: %s", spanList(got[alone:]))
	if covered := time.Duration(coveredOf(got[alone:], from, to)); covered < starved/2 {
		t.Fatalf("a process starved for %v: stalls cover %v of it", starved, covered)
	}
}

// coveredOf is how much of [from, to] the spans cover together: all of it
// but what Minus leaves.
func coveredOf(spans []Span, from, to int64) int64 {
	covered := to - from
	for _, left := range Minus(Span{Start: from, End: to}, spans) {
		covered -= left.End - left.Start
	}
	return covered
}

func spanList(spans []Span) string {
	s := ""
	for _, x := range spans {
		s += strconv.FormatFloat(x.Duration().Seconds(), 'f', 3, 64) + "s "
	}
	return s
}

func TestAsleepIn(t *testing.T) {
	for in, want := range map[string]bool{
		"123 (java) R 1 2 3": false,
		"123 (java) S 1 2 3": true,
		"123 (java) D 1":     true,
		"123 (a) b) T 1":     true, // stopped; a command with a parenthesis
		"123 (x) R":          false,
		"garbage":            false,
	} {
		if got := asleepIn([]byte(in)); got != want {
			t.Errorf("asleepIn(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCoveredOf(t *testing.T) {
	for _, tt := range []struct {
		spans []Span
		want  int64
	}{
		{nil, 0},
		{[]Span{{Start: 10, End: 20}, {Start: 30, End: 40}}, 20},
		{[]Span{{Start: 30, End: 50}, {Start: 10, End: 35}}, 40},  // overlapping, out of order
		{[]Span{{Start: 0, End: 15}, {Start: 95, End: 200}}, 10},  // clipped to [10, 100]
		{[]Span{{Start: 10, End: 100}, {Start: 20, End: 30}}, 90}, // one inside another
		{[]Span{{Start: 200, End: 300}, {Start: -50, End: 5}}, 0}, // outside
	} {
		if got := coveredOf(tt.spans, 10, 100); got != tt.want {
			t.Errorf("coveredOf(%v) = %d, want %d", tt.spans, got, tt.want)
		}
	}
}

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
	for _, tt := range []struct {
		name      string
		prev, cur map[int]uint64
		want      time.Duration // 0: no stall
	}{
		{"no wait", map[int]uint64{1: 5 * ms}, map[int]uint64{1: 5 * ms}, 0},
		{"a short wait", map[int]uint64{1: 5 * ms}, map[int]uint64{1: 60 * ms}, 0},
		{"a wait at the threshold", map[int]uint64{1: 5 * ms}, map[int]uint64{1: 105 * ms}, 100 * time.Millisecond},
		{"the longest thread's", map[int]uint64{1: 0, 2: 0}, map[int]uint64{1: 150 * ms, 2: 400 * ms}, 400 * time.Millisecond},
		{"a thread first seen says nothing", map[int]uint64{1: 0}, map[int]uint64{1: 0, 2: 900 * ms}, 0},
		{"a thread gone", map[int]uint64{1: 0, 2: 0}, map[int]uint64{1: 0}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := longestWait(tt.prev, tt.cur, now, 100*time.Millisecond)
			if ok != (tt.want > 0) || ok && (s.End != now || s.Duration() != tt.want) {
				t.Fatalf("longestWait = %+v, %v; want %v ending now", s, ok, tt.want)
			}
		})
	}
}

func TestParseSchedstat(t *testing.T) {
	for in, want := range map[string]int64{"123 4567 8\n": 4567, "1 2 3": 2, "9": -1, "": -1, "1 x 3": -1} {
		w, ok := parseSchedstat([]byte(in))
		if ok != (want >= 0) || ok && int64(w) != want {
			t.Errorf("parseSchedstat(%q) = %d, %v; want %d", in, w, ok, want)
		}
	}
}

// A busy process starved of its CPU (moved into a cgroup allowed 1 ms a
// second) waits on the run queue: the watch reports a stall of about the
// starvation's length.
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
	starve.CPU(t, []int{busy.Process.Pid}, time.Second)
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	if alone > 0 {
		t.Logf("%d stall(s) before the starvation (a loaded machine)", alone)
	}
	var longest time.Duration
	for _, s := range got[alone:] {
		longest = max(longest, s.Duration())
	}
	t.Logf("stalls after: %s", spanList(got[alone:]))
	if longest < 400*time.Millisecond {
		t.Fatalf("a process starved for 1 s: longest stall seen %v", longest)
	}
}

func spanList(spans []Span) string {
	s := ""
	for _, x := range spans {
		s += strconv.FormatFloat(x.Duration().Seconds(), 'f', 3, 64) + "s "
	}
	return s
}

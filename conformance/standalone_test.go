package conformance

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/stall"
)

// brief is a result without its time, for comparing.
type brief struct {
	Name   string
	Status Status
	Output string
}

func briefs(rs []Result) []brief {
	var out []brief
	for _, r := range rs {
		out = append(out, brief{r.Name, r.Status, strings.Join(r.Output, "|")})
	}
	return out
}

func TestStandaloneSemantics(t *testing.T) {
	tests := []struct {
		name  string
		suite func(T)
		want  []brief
	}{
		{
			name: "pass, error, fatal, skip",
			suite: func(t T) {
				t.Run("Passes", func(t T) { t.Logf("fine %d", 1) })
				t.Run("Errors", func(t T) { t.Errorf("one"); t.Errorf("two") })
				t.Run("Fatal ends the test", func(t T) {
					t.Fatalf("stop %s", "here")
					t.Errorf("never reached")
				})
				t.Run("Skips", func(t T) {
					t.Skip("not declared fair")
					t.Errorf("never reached")
				})
			},
			want: []brief{
				{"top/Passes", Passed, "fine 1"},
				{"top/Errors", Failed, "one|two"},
				{"top/Fatal_ends_the_test", Failed, "stop here"},
				{"top/Skips", Skipped, "not declared fair"},
				{"top", Failed, ""},
			},
		},
		{
			name: "a panic is the test's failure, and the next test still runs",
			suite: func(t T) {
				t.Run("Panics", func(t T) {
					var m map[string]int
					m["x"] = 1
				})
				t.Run("After", func(t T) {})
			},
			want: []brief{
				{"top/Panics", Failed, "panic: assignment to entry in nil map"},
				{"top/After", Passed, ""},
				{"top", Failed, ""},
			},
		},
		{
			name: "cleanups run last first, after Fatal too, and a panicking one fails its test",
			suite: func(t T) {
				t.Run("Cleans", func(t T) {
					t.Cleanup(func() { t.Logf("first registered") })
					t.Cleanup(func() { t.Logf("second registered") })
					t.Fatal("fatal", 7)
				})
				t.Run("CleanupPanics", func(t T) {
					t.Cleanup(func() { panic("in cleanup") })
				})
			},
			want: []brief{
				{"top/Cleans", Failed, "fatal 7|second registered|first registered"},
				{"top/CleanupPanics", Failed, "panic: in cleanup"},
				{"top", Failed, ""},
			},
		},
		{
			name: "errors from other goroutines count; a skip after an error is a failure",
			suite: func(t T) {
				t.Run("Goroutines", func(t T) {
					var wg sync.WaitGroup
					for i := 0; i < 3; i++ {
						wg.Add(1)
						go func() { defer wg.Done(); t.Errorf("waiter") }()
					}
					wg.Wait()
				})
				t.Run("ErrorThenSkip", func(t T) { t.Errorf("bad"); t.Skipf("then %s", "skip") })
			},
			want: []brief{
				{"top/Goroutines", Failed, "waiter|waiter|waiter"},
				{"top/ErrorThenSkip", Failed, "bad|then skip"},
				{"top", Failed, ""},
			},
		},
		{
			name: "nested subtests, repeated names, Run's answer",
			suite: func(t T) {
				t.Run("A", func(t T) {
					if t.Run("B", func(t T) {}) != true {
						t.Errorf("a passing subtest: Run = false")
					}
					if t.Run("B", func(t T) { t.Fatal("x") }) != false {
						t.Errorf("a failing subtest: Run = true")
					}
				})
			},
			want: []brief{
				{"top/A/B", Passed, ""},
				{"top/A/B#01", Failed, "x"},
				{"top/A", Failed, ""},
				{"top", Failed, ""},
			},
		},
		{
			name:  "a test that does nothing passes",
			suite: func(t T) {},
			want:  []brief{{"top", Passed, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reported []Result
			s := &Standalone{Report: func(r Result) { reported = append(reported, r) }}
			got, err := s.Run(context.Background(), "top", tt.suite)
			if err != nil {
				t.Fatal(err)
			}
			b := briefs(got)
			for i := range b {
				// A panic's output goes on with its stack.
				if p, _, ok := strings.Cut(b[i].Output, "\ngoroutine "); ok {
					b[i].Output = p
				}
			}
			if !slices.Equal(b, tt.want) {
				t.Errorf("results:\n got %v\nwant %v", b, tt.want)
			}
			if len(reported) != len(got) {
				t.Errorf("reported %d results, returned %d", len(reported), len(got))
			}
		})
	}
}

func TestStandaloneMatch(t *testing.T) {
	re := regexp.MustCompile("Keep")
	s := &Standalone{Match: re.MatchString}
	ran := map[string]bool{}
	got, err := s.Run(context.Background(), "top", func(t T) {
		for _, n := range []string{"KeepMe", "DropMe", "AlsoKeep"} {
			t.Run(n, func(t T) { ran[n] = true })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{{"top/KeepMe", Passed, ""}, {"top/AlsoKeep", Passed, ""}, {"top", Passed, ""}}
	if b := briefs(got); !slices.Equal(b, want) || ran["DropMe"] {
		t.Errorf("got %v (ran %v), want %v", b, ran, want)
	}
}

// A Ctrl-C returns at once, starts no further test, and reports nothing
// from the abandoned one.
func TestStandaloneInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	var afterRan, lateRun atomic.Bool
	s := &Standalone{}
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	got, err := s.Run(ctx, "top", func(t T) {
		t.Run("Done", func(t T) {})
		t.Run("Hangs", func(t T) { <-release })
		lateRun.Store(t.Run("After", func(t T) { afterRan.Store(true) }))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Its hanging test never ends: a run that waited for it never returns.
	if took := time.Since(start); took > 2*time.Second+stalls.Within(start, start.Add(took)) {
		t.Errorf("returned %v after the interrupt", took)
	}
	if b := briefs(got); !slices.Equal(b, []brief{{"top/Done", Passed, ""}}) {
		t.Errorf("results %v, want the one test that ended", b)
	}
	close(release)
	time.Sleep(50 * time.Millisecond)
	if afterRan.Load() || lateRun.Load() {
		t.Errorf("a test started after the interrupt (ran %v, Run = %v)", afterRan.Load(), lateRun.Load())
	}
}

// The *testing.T wrapper runs subtests as testing does.
func TestTestingTRunsSubtests(t *testing.T) {
	var names []string
	var w T = testingT{t}
	w.Run("Sub", func(t T) { names = append(names, t.Name()) })
	if want := []string{"TestTestingTRunsSubtests/Sub"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
}

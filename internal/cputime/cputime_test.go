package cputime

import (
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		err        bool
	}{
		{"plain", "1234 (redis-server) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 5 0 100 0 0", 3 * time.Second, false},
		{"spaces and parentheses in the name", "77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0", 100 * time.Millisecond, false},
		{"cut short", "77 (x) R 1 77", 0, true},
		{"no name", "77 x R", 0, true},
		{"not a number", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 a 5 0", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.stat))
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("parseStat = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// This process's own CPU, read both ways, grows with work and agrees
// within the kernel's tick.
func TestSelfAndProcessAgree(t *testing.T) {
	before, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	for x, start := 0, time.Now(); time.Since(start) < 100*time.Millisecond; x++ {
		_ = x * x
	}
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self <= before {
		t.Fatalf("Self did not grow over a busy loop: %v then %v", before, self)
	}
	if d := self - proc; d < -20*time.Millisecond || d > 20*time.Millisecond {
		t.Fatalf("Self %v, /proc %v: more than two ticks apart", self, proc)
	}
	if got := Processes([]int{os.Getpid(), -1}); got < proc {
		t.Fatalf("Processes with a pid that is gone = %v, want at least %v", got, proc)
	}
}

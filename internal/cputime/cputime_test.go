package cputime

import (
	"os"
	"testing"
	"time"
)

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

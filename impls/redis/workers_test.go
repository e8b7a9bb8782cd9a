package redis

import (
	"runtime"
	"testing"
	"time"
)

// A function that blocks holds only its own worker: the next runs at once.
func TestWorkersDoNotWaitForABlockedOne(t *testing.T) {
	w := newWorkers()
	defer w.close()
	release := make(chan struct{})
	defer close(release)
	w.run(func() { <-release })
	ran := make(chan struct{})
	w.run(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a function waited behind a blocked one")
	}
}

// Functions run one after another reuse an idle worker instead of starting
// goroutines (the point of them); close ends the idle ones.
func TestWorkersAreReusedAndEndAtClose(t *testing.T) {
	before := runtime.NumGoroutine()
	w := newWorkers()
	for i := 0; i < 100; i++ {
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		time.Sleep(time.Millisecond) // the worker is back, idle
	}
	if n := w.started.Load(); n > 3 {
		t.Fatalf("%d goroutines started for 100 functions one after another; want 1", n)
	}
	w.close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines more than before after close", runtime.NumGoroutine()-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package workload

import (
	"context"
	"testing"
	"time"
)

// Settled waits for a step begun before the halt, and a step asked after
// it waits for Off.
func TestHaltSettlesStepsUnderWay(t *testing.T) {
	h := &Halt{}
	if err := h.Settled(context.Background()); err != nil {
		t.Fatalf("settled with no step: %v", err)
	}
	done := h.step()
	h.On()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := h.Settled(ctx); err == nil {
		t.Fatal("settled while a step begun before the halt was under way")
	}
	settled := make(chan error, 1)
	go func() { settled <- h.Settled(context.Background()) }()
	done()
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	began := make(chan struct{})
	go func() { defer close(began); h.step()() }()
	select {
	case <-began:
		t.Fatal("a step began while halted")
	case <-time.After(20 * time.Millisecond):
	}
	h.Off()
	<-began
	var none *Halt
	none.step()()
}

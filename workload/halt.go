package workload

import (
	"context"
	"sync"
)

// Halt stops a client's own code while it is on. A client whose lock
// library runs in a process of its own (an adapter) has its critical
// section here, in locklab: a pause of that process alone would stop the
// library (its heartbeats, its renewals) while the holder worked on and
// let go in time. A stop-the-world pause (Kleppmann's GC pause) stops
// both: the fault turns the halt on with the SIGSTOP, and the holder's
// next step (its write, its release) waits until the SIGCONT. A hang
// (client-hang: a deadlock, a hung call) turns the halt on alone: the
// holder's steps and its own renewals stop, while its lock library's
// threads (heartbeats, keep-alives, a watchdog) go on.
type Halt struct {
	mu  sync.Mutex
	off chan struct{} // closed while the client may go on; nil: never halted
	// steps are the writes to the protected store under way: begun before
	// the halt came on, they end after it, and idle is closed when the
	// last one does.
	steps int
	idle  chan struct{}
}

// On halts the client at its next step.
func (h *Halt) On() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.off == nil || isClosed(h.off) {
		h.off = make(chan struct{})
	}
}

// Off lets the client go on.
func (h *Halt) Off() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.off != nil && !isClosed(h.off) {
		close(h.off)
	}
}

// Settled returns once no write begun before the halt is under way, or
// when ctx ends: a fault that checks what the holder did before it
// stopped (had it written?) then reads the whole of it.
func (h *Halt) Settled(ctx context.Context) error {
	h.mu.Lock()
	if h.steps == 0 {
		h.mu.Unlock()
		return nil
	}
	if h.idle == nil {
		h.idle = make(chan struct{})
	}
	idle := h.idle
	h.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// step waits until the client may go on, then counts a step under way
// until done is called.
func (h *Halt) step() (done func()) {
	if h == nil {
		return func() {}
	}
	for {
		h.mu.Lock()
		off := h.off
		if off == nil || isClosed(off) {
			h.steps++
			h.mu.Unlock()
			return h.stepDone
		}
		h.mu.Unlock()
		<-off
	}
}

func (h *Halt) stepDone() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps--
	if h.steps == 0 && h.idle != nil {
		close(h.idle)
		h.idle = nil
	}
}

// halted reports whether the halt is on now.
func (h *Halt) halted() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.off != nil && !isClosed(h.off)
}

// wait returns once the client may go on (at once without a halt).
func (h *Halt) wait() {
	if h == nil {
		return
	}
	h.mu.Lock()
	off := h.off
	h.mu.Unlock()
	if off != nil {
		<-off
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/workload"
)

// processLocker is a Locker that is an OS process of its own (an adapter:
// impls.Approach.OwnProcess), which a fault stops and kills directly.
type processLocker interface {
	impls.Locker
	Pause() error
	Resume() error
	Kill() error
}

// ownSlot is a goroutine slot whose lock client is a process of its own:
// the fleet's Process for it, aimed at whichever client holds the slot
// now. An adapter is not wrapped in a `locklab worker`: the adapter
// process already is the client whole (its heartbeats, its connections),
// so a signal to it (to its process group, see adapter.Locker) is the
// fault itself, and the client loop stays here, as for goroutines.
type ownSlot struct {
	index int
	// halt stops the client loop's own steps (its critical section runs
	// here) while the process is paused: the two are one client.
	halt   workload.Halt
	now    func() int64
	rec    history.Recorder // the fleet's recorder, past the filter
	filter *crashFilter
	mu     sync.Mutex
	proc   int
	locker impls.Locker
}

// hold makes l, recording as proc, the slot's client.
func (s *ownSlot) hold(proc int, l impls.Locker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc, s.locker = proc, l
}

func (s *ownSlot) current() (int, processLocker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.locker.(processLocker)
	if !ok {
		return 0, nil, fmt.Errorf("client %d has no running process", s.index)
	}
	return s.proc, p, nil
}

func (s *ownSlot) Pause() error {
	_, p, err := s.current()
	if err != nil {
		return err
	}
	if err := p.Pause(); err != nil {
		return err
	}
	s.halt.On()
	return nil
}

func (s *ownSlot) Resume() error {
	_, p, err := s.current()
	if err != nil {
		return err
	}
	s.halt.Off()
	return p.Resume()
}

// Hang halts the client loop's own steps, which run here; the adapter
// process, its library's threads with it, goes on.
func (s *ownSlot) Hang() error {
	s.halt.On()
	// The store is in this process: a write under way ends at once.
	ctx, cancel := context.WithTimeout(context.Background(), hangAnswer)
	defer cancel()
	_ = s.halt.Settled(ctx)
	return nil
}

func (s *ownSlot) Unhang() error {
	s.halt.Off()
	return nil
}

// Kill kills the slot's client process and records the crash at the
// moment of the kill, as the worker kind does: from then on nothing of
// that process id is recorded (the client loop, which lives on here, gets
// impls.ErrCrashed and is replaced under a new process id).
func (s *ownSlot) Kill() error {
	proc, p, err := s.current()
	if err != nil {
		return err
	}
	at := s.now()
	s.filter.kill(proc)
	err = p.Kill()
	s.halt.Off() // a killed client's loop learns of it at its next step
	s.rec.Record(history.Event{Proc: proc, Type: history.Info, F: history.Crash, T: at})
	return err
}

// crashFilter keeps out of the history what a killed client's goroutine
// still does after its process died: a dead process records nothing.
type crashFilter struct {
	next   history.Recorder
	mu     sync.Mutex
	killed map[int]bool
}

func newCrashFilter(next history.Recorder) *crashFilter {
	return &crashFilter{next: next, killed: map[int]bool{}}
}

func (f *crashFilter) kill(proc int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed[proc] = true
}

func (f *crashFilter) dead(proc int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[proc]
}

// Record passes ev on unless its process was killed. It holds the lock
// while it does, so an event is either recorded before a kill's crash
// event or not at all.
func (f *crashFilter) Record(ev history.Event) history.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed[ev.Proc] {
		return ev
	}
	return f.next.Record(ev)
}

// errKilled is what a killed client's goroutine gets from the store.
var errKilled = errors.New("client process killed")

// crashStore is the protected resource as a killed client's goroutine
// sees it: closed to it, as to a dead process.
type crashStore struct {
	workload.Resource
	filter *crashFilter
}

func (s crashStore) Read(proc int, key string, token *uint64) (int64, error) {
	if s.filter.dead(proc) {
		return 0, errKilled
	}
	return s.Resource.Read(proc, key, token)
}

func (s crashStore) Write(proc int, key string, v, read int64, token *uint64) error {
	if s.filter.dead(proc) {
		return errKilled
	}
	return s.Resource.Write(proc, key, v, read, token)
}

func (s crashStore) Process(proc int, key string, token *uint64) (int, error) {
	if s.filter.dead(proc) {
		return 0, errKilled
	}
	return s.Resource.Process(proc, key, token)
}

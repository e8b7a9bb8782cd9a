package history

import "sync"

// Recorder takes events in the order they happen and returns each as
// recorded (with its index assigned). The JSONL Writer, the checker's live
// feed and tests' in-memory logs all take events this way.
type Recorder interface {
	Record(Event) Event
}

// Discard records nothing: a run with --no-history, to measure what
// recording costs.
type Discard struct{}

// Record returns ev unchanged.
func (Discard) Record(ev Event) Event { return ev }

// Memory keeps events in memory, indexed in arrival order. Safe for
// concurrent use.
type Memory struct {
	mu     sync.Mutex
	events []Event
}

// Record appends ev with the next index.
func (m *Memory) Record(ev Event) Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev.Index = int64(len(m.events))
	m.events = append(m.events, ev)
	return ev
}

// Events returns a copy of what was recorded.
func (m *Memory) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Event(nil), m.events...)
}

// Lost is the event a holder records when it is told its lock is gone
// without having released it (a Lost signal: session expiry, a failed
// renewal): {"type":"info","f":"lost"}. The checker reads it as the end of
// the holder's belief that it holds.
const Lost = "lost"

// Crash is the event the runner records when a client process dies
// without a last word (a client-crash fault): {"type":"info","f":"crash"}.
// The process issues nothing further; the lock it may hold is left to the
// server, and the client's slot is taken by a new process id.
const Crash = "crash"

package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/locklab/locklab/history"
)

// Store is the protected resource locklab runs: balances and task records
// that lock holders read and write. It records every read and write itself,
// under its own mutex, so the history shows them in the order the store
// applied them. In fenced mode it refuses a write whose fencing token is
// lower than one it already accepted for that key.
type Store struct {
	mu      sync.Mutex
	rec     history.Recorder
	clk     Stamper
	fenced  bool
	initial int64
	balance map[string]int64
	fence   map[string]uint64
	done    map[string]int
}

// NewStore returns a store whose balances start at initial.
func NewStore(rec history.Recorder, clk Stamper, fenced bool, initial int64) *Store {
	return &Store{rec: rec, clk: clk, fenced: fenced, initial: initial,
		balance: map[string]int64{}, fence: map[string]uint64{}, done: map[string]int{}}
}

// ErrStaleToken: a fenced store refused a write from a stale holder.
var ErrStaleToken = errors.New("stale fencing token")

func (s *Store) record(proc int, typ history.Type, f, key string, value any, token *uint64, err error) {
	b, _ := json.Marshal(value)
	ev := history.Event{Proc: proc, Type: typ, F: f, Key: key, Value: b, Token: token, T: s.clk.Nanos()}
	if err != nil {
		ev.Error = err.Error()
	}
	s.rec.Record(ev)
}

// Read returns the balance of key. A fenced store remembers the highest
// token it has seen on any request, reads included, and refuses older
// ones: the newer holder's read must already lock out the stale holder's
// write that comes after it.
func (s *Store) Read(proc int, key string, token *uint64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.balance[key]
	if !ok {
		b = s.initial
		s.balance[key] = b
	}
	if err := s.checkFence(key, token); err != nil {
		s.record(proc, history.Fail, history.Read, key, map[string]int64{"balance": b}, token, err)
		return 0, err
	}
	s.record(proc, history.OK, history.Read, key, map[string]int64{"balance": b}, token, nil)
	return b, nil
}

// Write sets the balance of key to v; read is the balance the writer based
// it on (for the lost-update check). token is the writer's fencing token.
func (s *Store) Write(proc int, key string, v, read int64, token *uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	value := map[string]int64{"balance": v, "read": read}
	if err := s.checkFence(key, token); err != nil {
		s.record(proc, history.Fail, history.Write, key, value, token, err)
		return err
	}
	s.balance[key] = v
	s.record(proc, history.OK, history.Write, key, value, token, nil)
	return nil
}

// Process marks task key as processed once more and says how often it now
// has been.
func (s *Store) Process(proc int, key string, token *uint64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkFence(key, token); err != nil {
		s.record(proc, history.Fail, history.Write, key, map[string]int{"processed": s.done[key]}, token, err)
		return s.done[key], err
	}
	s.done[key]++
	s.record(proc, history.OK, history.Write, key, map[string]int{"processed": s.done[key]}, token, nil)
	return s.done[key], nil
}

// Done reports whether task key has been processed.
func (s *Store) Done(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[key] > 0
}

func (s *Store) checkFence(key string, token *uint64) error {
	if !s.fenced || token == nil {
		return nil
	}
	if *token < s.fence[key] {
		return fmt.Errorf("%w: %d < %d", ErrStaleToken, *token, s.fence[key])
	}
	s.fence[key] = *token
	return nil
}

// Balances returns a copy of every balance.
func (s *Store) Balances() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.balance))
	for k, v := range s.balance {
		out[k] = v
	}
	return out
}

package workload

import (
	"errors"
	"sync"
	"testing"

	"github.com/locklab/locklab/history"
)

type memRecorder struct {
	mu  sync.Mutex
	evs []history.Event
}

func (m *memRecorder) Record(ev history.Event) history.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev.Index = int64(len(m.evs))
	m.evs = append(m.evs, ev)
	return ev
}

type fakeClock struct{ n int64 }

func (f *fakeClock) Nanos() int64 { f.n++; return f.n }

func tok(n uint64) *uint64 { return &n }

func TestFencedStoreRefusesStaleHolderAfterNewerRead(t *testing.T) {
	tests := []struct {
		name      string
		fenced    bool
		wantErr   bool
		wantFinal int64
	}{
		// The newer holder deducts 10 (100 -> 90); the stale holder then
		// writes its own deduction of 3 based on the 100 it read before.
		{"unfenced: the stale write lands over the newer one, an update is lost", false, false, 97},
		{"fenced: the newer read locks the stale holder out, the newer write stands", true, true, 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &memRecorder{}
			s := NewStore(rec, &fakeClock{}, tt.fenced, 100)
			old, _ := s.Read(1, "acct", tok(5)) // the old holder reads, then stalls
			fresh, err := s.Read(2, "acct", tok(6))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(2, "acct", fresh-10, fresh, tok(6)); err != nil {
				t.Fatal(err)
			}
			err = s.Write(1, "acct", old-3, old, tok(5)) // the stale holder wakes up
			if got := errors.Is(err, ErrStaleToken); got != tt.wantErr {
				t.Fatalf("stale write err = %v", err)
			}
			if got := s.Balances()["acct"]; got != tt.wantFinal {
				t.Fatalf("final balance %d, want %d", got, tt.wantFinal)
			}
			if len(rec.evs) != 4 {
				t.Fatalf("%d events recorded", len(rec.evs))
			}
		})
	}
}

func TestStoreProcessCounts(t *testing.T) {
	s := NewStore(&memRecorder{}, &fakeClock{}, false, 0)
	if s.Done("t1") {
		t.Fatal("fresh task done")
	}
	for want := 1; want <= 2; want++ {
		if n, err := s.Process(1, "t1", nil); err != nil || n != want {
			t.Fatalf("process: %d %v", n, err)
		}
	}
	if !s.Done("t1") {
		t.Fatal("processed task not done")
	}
}

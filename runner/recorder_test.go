package runner

import (
	"path/filepath"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

// BenchmarkRecordAndCheck is what every workload event costs: the JSONL
// writer plus the live checker (intervals, resources, linearizability ops).
func BenchmarkRecordAndCheck(b *testing.B) {
	w, err := history.Create(filepath.Join(b.TempDir(), "h.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rec := &checkingRecorder{w: w, check: checker.New(checker.ModelLease, true)}
	phases := []struct {
		typ history.Type
		f   string
	}{{history.Invoke, history.Acquire}, {history.OK, history.Acquire}, {history.Invoke, history.Release}, {history.OK, history.Release}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := phases[i%4]
		rec.Record(history.Event{Proc: (i / 4) % 32, Type: p.typ, F: p.f, Key: "bench/redis-setnx-px-lua/c32/k0", T: int64(i)})
	}
}

// Blocked from the history: after the fault (at 100) someone asked and
// nobody was granted. An acquire whose deadline struck mid-call is an info
// event, and counts as asking as much as a refusal does.
func TestBlockedSince(t *testing.T) {
	acq := func(typ history.Type, at int64) history.Event {
		return history.Event{Proc: 1, Type: typ, F: history.Acquire, Key: "k", T: at}
	}
	tests := []struct {
		name string
		evs  []history.Event
		want bool
	}{
		{"refused after the fault", []history.Event{acq(history.OK, 50), acq(history.Fail, 150)}, true},
		{"timed out mid-call after the fault", []history.Event{acq(history.OK, 50), acq(history.Info, 150)}, true},
		{"granted after the fault", []history.Event{acq(history.Fail, 150), acq(history.OK, 160)}, false},
		{"nobody asked after the fault", []history.Event{acq(history.OK, 50), acq(history.Fail, 60)}, false},
		{"only invoked after the fault", []history.Event{acq(history.OK, 50), acq(history.Invoke, 150)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &checkingRecorder{w: history.Discard{}}
			for _, ev := range tt.evs {
				rec.Record(ev)
			}
			if got := rec.blockedSince(100); got != tt.want {
				t.Errorf("blockedSince = %v, want %v", got, tt.want)
			}
		})
	}
}

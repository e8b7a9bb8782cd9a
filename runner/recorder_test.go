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

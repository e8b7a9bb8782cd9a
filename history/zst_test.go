package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// writeZstd records events 0..n-1 of benchEvent into a new .zst history.
func writeZstd(t *testing.T, path string, n int) {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		w.Record(benchEvent(i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func benchEvent(i int) Event {
	return Event{Proc: i % 8, Type: OK, F: Acquire, Key: fmt.Sprintf("94c0/redis-setnx-px-lua/c8/k%d", i%8),
		Token: tok(uint64(i)), ValidUntil: 1_700_000_000_000 + int64(i)*1000, T: 2_646_898_073_883 + int64(i)*31_337}
}

// A .zst history reads back as it was written, through ReadFile and Load,
// and is detected by its magic bytes whatever its name.
func TestZstdRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"h.jsonl.zst", "h.jsonl.zst.renamed"} {
		path := filepath.Join(dir, "h.jsonl.zst")
		writeZstd(t, path, 5000)
		if name != "h.jsonl.zst" {
			if err := os.Rename(path, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			path = filepath.Join(dir, name)
		}
		head := make([]byte, 4)
		f, _ := os.Open(path)
		f.Read(head)
		f.Close()
		if !IsZstd(head) {
			t.Fatalf("%s: starts % x, not a zstd frame", name, head)
		}
		evs, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 5000 || evs[4999].Index != 4999 || evs[4999].T != ToResolution(benchEvent(4999).T) {
			t.Fatalf("%s: read %d events, last %+v", name, len(evs), evs[len(evs)-1])
		}
		var format string
		n := 0
		if _, err := Load(context.Background(), path, "", func(f string) { format = f }, func(Event) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if format != "jsonl" || n != 5000 {
			t.Fatalf("%s: Load read %d events as %q", name, n, format)
		}
	}
}

// A run killed between flushes leaves a file cut anywhere after the last
// flush: it reads as every event flushed, and no error.
func TestZstdCutMidRunReadsUpToTheCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl.zst")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	flushed := func() []byte {
		if err := w.flush(true); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range 300 {
		w.Record(benchEvent(i))
	}
	first := flushed()
	for i := 300; i < 700; i++ {
		w.Record(benchEvent(i))
	}
	second := flushed()
	if len(second) <= len(first) {
		t.Fatalf("second flush wrote nothing: %d then %d bytes", len(first), len(second))
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl.zst")
	// Every cut near either flush, and a sample between (each read is a
	// new decoder: every byte would take seconds).
	step := max(1, (len(second)-len(first))/100)
	for n := len(first); n <= len(second); n++ {
		if n-len(first) > 32 && len(second)-n > 32 && (n-len(first))%step != 0 {
			continue
		}
		if err := os.WriteFile(cut, second[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		want := 300
		if n == len(second) {
			want = 700
		}
		evs, err := ReadFile(cut)
		if err != nil {
			t.Fatalf("cut at %d of %d bytes: %v", n, len(second), err)
		}
		if len(evs) != want || evs[want-1].Index != int64(want-1) {
			t.Fatalf("cut at %d of %d bytes: read %d events, want %d", n, len(second), len(evs), want)
		}
	}
}

// A corrupt block is an error, not a short history.
func TestZstdCorruptIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl.zst")
	writeZstd(t, path, 2000)
	b, _ := os.ReadFile(path)
	for i := len(b) / 3; i < len(b)/3+64; i++ {
		b[i] ^= 0xA5
	}
	os.WriteFile(path, b, 0o644)
	if evs, err := ReadFile(path); err == nil {
		t.Fatalf("a corrupt file read as %d events and no error", len(evs))
	}
}

// What recording costs the workload, per event, plain (the writer as it
// was) and compressed, and the bytes each event leaves on disk. Close (a
// sync) is not timed: the workload never waits for it.
func BenchmarkWriter(b *testing.B) {
	for _, name := range []string{"h.jsonl", "h.jsonl.zst"} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), name)
			w, err := Create(path)
			if err != nil {
				b.Fatal(err)
			}
			ev := benchEvent(1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ev.Proc, ev.T = i%8, ev.T+31_337+int64(i%97)
				w.Record(ev)
			}
			b.StopTimer()
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			if st, err := os.Stat(path); err == nil {
				b.ReportMetric(float64(st.Size())/float64(b.N), "B/event")
			}
		})
	}
}

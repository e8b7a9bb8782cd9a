package history

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Load tells the format it reads, detected or given, before the first
// event (what judges the events may depend on it: Jepsen's histories are
// judged as Knossos does), and counts what it read.
func TestLoadTellsTheFormatFirst(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, format, want string
	}{
		{"h.jsonl", `{"proc":0,"type":"invoke","f":"acquire","key":"k","t":1}` + "\n" + `{"proc":0,"type":"ok","f":"acquire","key":"k","t":2}`, "", "jsonl"},
		{"h.edn", "[{:process 0, :type :invoke, :f :acquire, :time 1}\n{:process 0, :type :ok, :f :acquire, :time 2}]", "", "edn"},
		{"h.json", `[{"process":0,"type":"invoke","f":"acquire","time":1},{"process":0,"type":"ok","f":"acquire","time":2}]`, "", "jepsen-json"},
		{"forced.json", `{"process":0,"type":"invoke","f":"acquire","time":1}` + "\n" + `{"process":0,"type":"ok","f":"acquire","time":2}`, "json", "json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var told string
			events := 0
			l, err := Load(context.Background(), path, tt.format, func(f string) {
				if events != 0 {
					t.Errorf("told the format after %d events", events)
				}
				told = f
			}, func(Event) error { events++; return nil })
			if err != nil || told != tt.want || l.Format != tt.want || events != 2 || l.LockOps != 2 {
				t.Fatalf("told %q, loaded %+v, %d events, err %v; want %q and 2 events", told, l, events, err, tt.want)
			}
		})
	}
	// An unknown format is told to nobody.
	path := filepath.Join(dir, "h.jsonl")
	if _, err := Load(context.Background(), path, "xml", func(string) { t.Error("told an unknown format") }, func(Event) error { return nil }); err == nil {
		t.Fatal("an unknown format loaded")
	}
}

package history

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func tok(v uint64) *uint64 { return &v }

func TestWriterRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	in := []Event{
		{Proc: 1, Type: Invoke, F: Acquire, Key: "k1", T: 10},
		{Proc: 1, Type: OK, F: Acquire, Key: "k1", Token: tok(7), ValidUntil: 99, T: 20, Value: json.RawMessage(`"owner-a"`)},
		{Proc: 2, Type: Info, F: Release, Key: "we\"ird\nkey", T: 30, Error: "timeout: é"},
	}
	for _, ev := range in {
		w.Record(ev)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i].Index = int64(i)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

func TestAppendJSONIsValidJSON(t *testing.T) {
	ev := Event{Index: 3, Proc: 4, Type: OK, F: Acquire, Key: "a\\b\x01", T: -5}
	var m map[string]any
	if err := json.Unmarshal(AppendJSON(nil, &ev), &m); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if m["key"] != "a\\b\x01" {
		t.Fatalf("key = %q", m["key"])
	}
}

func TestReadJSONLErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bad json", `{"proc":1,"type":"ok","f":"acquire","t":1}` + "\n{oops\n", "line 2"},
		{"bad type", `{"proc":1,"type":"maybe","f":"acquire","t":1}`, `line 1: unknown type "maybe"`},
		{"missing f", `{"proc":1,"type":"ok","t":1}`, "line 1: missing f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ReadJSONL(strings.NewReader(tt.in), func(Event) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func BenchmarkRecord(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "h.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ev := Event{Proc: 12, Type: OK, F: Acquire, Key: "redis-setnx-px-lua/c8/k3", T: 123456789012}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Record(ev)
	}
}

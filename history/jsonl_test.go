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
		{Proc: 1, Type: OK, F: Acquire, Key: "k1", T: 40, Reentry: true},
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
		{"invalid utf-8", `{"proc":1,"type":"ok","f":"acquire","t":1}` + "\n" + `{"proc":1,"type":"ok","f":"acquire","key":"k` + "\xff" + `","t":2}`, "line 2: not valid UTF-8"},
		{"line over 16 MiB", `{"proc":1,"type":"ok","f":"acquire","key":"` + strings.Repeat("k", 17<<20) + `","t":1}`, "line 1: bufio.Scanner: token too long"},
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

// TestReadFileFormatSkipsByteOrderMark: a UTF-8 byte order mark, as some
// editors write, is skipped whether the format is detected or named.
func TestReadFileFormatSkipsByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	tests := []struct{ format, in string }{
		{"", bom + `{"proc":1,"type":"invoke","f":"acquire","t":1}`},
		{"jsonl", bom + `{"proc":1,"type":"invoke","f":"acquire","t":1}`},
		{"edn", bom + `{:process 1, :type :invoke, :f :acquire, :time 1}`},
		{"jepsen-json", bom + `[{"process": 1, "type": "invoke", "f": "acquire", "time": 1}]`},
	}
	for _, tt := range tests {
		t.Run("format "+tt.format, func(t *testing.T) {
			var evs []Event
			err := ReadFileFormat(strings.NewReader(tt.in), tt.format, "h", func(ev Event) error { evs = append(evs, ev); return nil })
			if err != nil || len(evs) != 1 || evs[0].F != Acquire {
				t.Fatalf("err = %v, events %+v; want one acquire", err, evs)
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

package history

import (
	"encoding/json"
	"os"
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
		{Proc: 1, Type: Invoke, F: Acquire, Key: "k1", T: 10_000},
		{Proc: 1, Type: OK, F: Acquire, Key: "k1", Token: tok(7), ValidUntil: 99_000, T: 20_000, Value: json.RawMessage(`"owner-a"`)},
		{Proc: 2, Type: Info, F: Release, Key: "we\"ird\nkey", T: 30_000, Error: "timeout: é"},
		{Proc: 1, Type: OK, F: Acquire, Key: "k1", T: 40_000, Reentry: true},
	}
	for i, ev := range in {
		if got := w.Record(ev); got.Index != int64(i) {
			t.Fatalf("event %d recorded with index %d", i, got.Index)
		}
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

// The writer records times to the microsecond, rounded down (before the
// run, too), and leaves the index out of its lines: a reader counts it,
// and a line that has one sets the count.
func TestWriterRecordsMicrosecondsAndCountsTheIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	got := w.Record(Event{Proc: 1, Type: OK, F: Acquire, T: 1_234_567_891, ValidUntil: 2_000_000_999})
	if got.T != 1_234_567_000 || got.ValidUntil != 2_000_000_000 {
		t.Fatalf("recorded t %d, valid_until %d: want them to the microsecond, rounded down", got.T, got.ValidUntil)
	}
	w.Record(Event{Proc: 1, Type: Invoke, F: Release, T: -1_500})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"i":`) {
		t.Fatalf("the writer wrote indexes: %s", raw)
	}
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Index != 0 || evs[1].Index != 1 || evs[1].T != -2_000 {
		t.Fatalf("read %+v", evs)
	}
	for _, tc := range []struct {
		name, in string
		want     []int64
	}{
		{"none", `{"proc":1,"type":"ok","f":"acquire","t":1}` + "\n" + `{"proc":1,"type":"ok","f":"acquire","t":2}`, []int64{0, 1}},
		{"some", `{"i":7,"proc":1,"type":"ok","f":"acquire","t":1}` + "\n" + `{"proc":1,"type":"ok","f":"acquire","t":2}` + "\n" + `{"i":3,"proc":1,"type":"ok","f":"acquire","t":3}`, []int64{7, 8, 3}},
		{"slow path", `{ "proc":1,"type":"ok","f":"acquire","t":1}` + "\n" + `{"t":2, "proc":1,"type":"ok","f":"acquire"}`, []int64{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var idx []int64
			if err := ReadJSONL(strings.NewReader(tc.in), func(ev Event) error { idx = append(idx, ev.Index); return nil }); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(idx, tc.want) {
				t.Fatalf("indexes %v, want %v", idx, tc.want)
			}
		})
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

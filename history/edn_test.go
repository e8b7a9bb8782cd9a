package history

import (
	"bytes"
	"strings"
	"testing"
)

func readEDN(t *testing.T, s string) ([]Event, error) {
	t.Helper()
	var evs []Event
	err := ReadEDN(strings.NewReader(s), func(e Event) error { evs = append(evs, e); return nil })
	return evs, err
}

func TestReadEDNOnePerLine(t *testing.T) {
	evs, err := readEDN(t, `{:process 0, :type :invoke, :f :acquire, :value nil, :time 12345, :index 0}
{:process 0, :type :ok, :f :acquire, :value nil, :time 22345, :index 1}
; a comment
{:process :nemesis, :type :info, :f :start, :value "partition", :time 30000, :index 2}
{:process 1 :type :fail :f :release :value nil :time 40000 :index 3 :error [:not-held "k"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("%d events", len(evs))
	}
	if e := evs[1]; e.Proc != 0 || e.Type != OK || e.F != Acquire || e.T != 22345 || e.Index != 1 || e.Value != nil {
		t.Errorf("event 1: %+v", e)
	}
	if e := evs[2]; e.Proc != -1 || e.F != Nemesis || string(e.Value) != `{"f":"start","value":"partition"}` {
		t.Errorf("nemesis: %+v value %s", e, e.Value)
	}
	if e := evs[3]; e.Type != Fail || e.Error != `["not-held","k"]` {
		t.Errorf("event 3: %+v", e)
	}
}

func TestReadEDNVectorAndNestedValues(t *testing.T) {
	evs, err := readEDN(t, `[{:process 3, :type :invoke, :f :write, :value {:balance 100, :tags #{:a :b}, :when #inst "2020-01-01"}, :time 1}
 {:process 3, :type :ok, :f :write, :value {:balance 100N, :ratio 1.5M, :s "a\"b\n"}, :time 2, :extra (1 2 #_ 3)}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	for _, want := range []string{`"balance":100`, `"when":"2020-01-01"`, `"tags":["a","b"]`} {
		if !bytes.Contains(evs[0].Value, []byte(want)) {
			t.Errorf("value %s lacks %s", evs[0].Value, want)
		}
	}
	if !bytes.Contains(evs[1].Value, []byte(`"s":"a\"b\n"`)) || !bytes.Contains(evs[1].Value, []byte(`"ratio":1.5`)) {
		t.Errorf("value %s", evs[1].Value)
	}
}

func TestReadEDNIndependentTuplesAndKeys(t *testing.T) {
	evs, err := readEDN(t, `{:process 1, :type :ok, :f :acquire, :value [7 nil], :time 5}
{:process 1, :type :ok, :f :acquire, :key :lock-a, :value nil, :time 6, :token 42, :valid-until 99}`)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Key != "7" || evs[0].Value != nil {
		t.Errorf("tuple: key %q value %s", evs[0].Key, evs[0].Value)
	}
	if evs[1].Key != "lock-a" || evs[1].Token == nil || *evs[1].Token != 42 || evs[1].ValidUntil != 99 {
		t.Errorf("explicit: %+v", evs[1])
	}
}

func TestReadEDNErrorsNameTheLine(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"unclosed map", "{:process 0, :type :ok, :f :acquire}\n{:process 1, :type", "line 2"},
		{"odd map", "{:process 0 :type}", "odd number"},
		{"bad type", "{:process 0, :type :maybe, :f :acquire}", `unknown type "maybe"`},
		{"no process", "{:type :ok, :f :acquire}", "missing :process"},
		{"no f", "{:process 0, :type :ok}", "missing :f"},
		{"not a map", "42", "want an operation map"},
		{"stray close", "}", "unexpected"},
		{"deep", strings.Repeat("[", 1000), "nested too deeply"},
		{"bad string", `{:process 0, :type :ok, :f "acq`, "line 1"},
		// /dev/zero, or a corrupt file: bounded, not read into memory whole.
		{"endless token", strings.Repeat("x", 2<<20), "longer than 1048576 bytes"},
		{"endless string", `{:process 0, :f "` + strings.Repeat("y", 2<<20), "longer than 1048576 bytes"},
		{"invalid UTF-8", "{:process 0, :type :ok, :f :acq\xffuire}", "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readEDN(t, tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzReadEDN: no input makes the parser panic or hang; a parse either
// fails naming the line, or yields only valid events.
func FuzzReadEDN(f *testing.F) {
	for _, s := range []string{
		`{:process 0, :type :invoke, :f :acquire, :value nil, :time 12345, :index 0}`,
		`[{:process 0 :type :ok :f :release :value [1 2]} {:process :nemesis :type :info :f :start}]`,
		`#{1 2} ; c` + "\n" + `"str\u00e9" \a #_ x -1.5e3 12N`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var bad error
		err := ReadEDN(strings.NewReader(s), func(e Event) error {
			if bad == nil {
				bad = e.Validate()
			}
			return nil
		})
		if bad != nil {
			t.Fatalf("yielded an invalid event: %v", bad)
		}
		if err != nil && !strings.Contains(err.Error(), "line ") {
			t.Fatalf("error without a line: %v", err)
		}
	})
}

// FuzzReadJSONL: no input makes the reader panic; what it accepts is valid.
func FuzzReadJSONL(f *testing.F) {
	f.Add(`{"i":0,"proc":1,"type":"invoke","f":"acquire","key":"k","t":5}` + "\n" + `{"proc":1,"type":"ok","f":"acquire","t":6,"token":3}`)
	f.Add(`{"proc":1,"type":"info","f":"release","value":{"a":[1,2]},"t":-1}`)
	f.Fuzz(func(t *testing.T, s string) {
		_ = ReadJSONL(strings.NewReader(s), func(e Event) error {
			if err := e.Validate(); err != nil {
				t.Fatalf("accepted an invalid event: %v", err)
			}
			return nil
		})
	})
}

// A real U+FFFD (three bytes) is valid UTF-8, unlike a stray 0xff.
func TestReadEDNAcceptsReplacementCharacter(t *testing.T) {
	if _, err := readEDN(t, "{:process 0, :type :ok, :f :acquire, :value \"\uFFFD\"}"); err != nil {
		t.Fatal(err)
	}
}

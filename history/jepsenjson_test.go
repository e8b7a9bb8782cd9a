package history

import (
	"strings"
	"testing"
)

func TestReadJepsenJSONArrayAndLines(t *testing.T) {
	array := `[{"index":0,"time":10,"type":"invoke","process":0,"f":"acquire","value":["k1",null]},
 {"index":1,"time":20,"type":"ok","process":0,"f":"acquire","value":["k1",null]},
 {"index":2,"time":25,"type":"info","process":"nemesis","f":"start-partition","value":"majority"},
 {"index":3,"time":30,"type":"fail","process":1,"f":"release","value":["k1",null],"error":["not-held"]}]`
	lines := strings.ReplaceAll(strings.Trim(array, "[]"), "},\n", "}\n")
	for name, in := range map[string]string{"array": array, "lines": lines, "bom": "\ufeff" + array} {
		t.Run(name, func(t *testing.T) {
			var evs []Event
			if err := ReadJepsenJSON(strings.NewReader(in), func(e Event) error { evs = append(evs, e); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(evs) != 4 {
				t.Fatalf("%d events", len(evs))
			}
			if e := evs[1]; e.Proc != 0 || e.Type != OK || e.F != Acquire || e.Key != "k1" || e.T != 20 {
				t.Errorf("acquire: %+v", e)
			}
			if e := evs[2]; e.Proc != -1 || e.F != Nemesis || string(e.Value) != `{"f":"start-partition","value":"majority"}` {
				t.Errorf("nemesis: %+v %s", e, e.Value)
			}
			if e := evs[3]; e.Type != Fail || e.Error != `["not-held"]` || e.Key != "k1" {
				t.Errorf("release: %+v", e)
			}
			if ws := FaultWindows(evs); len(ws) != 1 || ws[0].Fault != "partition" {
				t.Errorf("windows %+v", ws)
			}
		})
	}
}

func TestReadJepsenJSONErrorsNameTheOperation(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"no process", `[{"type":"ok","f":"acquire"}]`, "operation 1: missing process"},
		{"bad process", `[{"type":"ok","f":"acquire","process":"x"}]`, `process "x"`},
		{"no f", `[{"type":"ok","process":1}]`, "missing f"},
		{"bad type", `[{"type":"maybe","f":"acquire","process":1}]`, `unknown type "maybe"`},
		{"truncated", `[{"type":"ok","f":"acquire","process":1},`, "operation 2"},
		{"not json", "{oops}\n", "operation 1"},
		{"endless operation", `[{"type":"ok","f":"acquire","process":1},{"value":"` + strings.Repeat("x", 17<<20), "operation 2: longer than 16777216 bytes"},
		{"nul bytes", strings.Repeat("\x00", 1<<20), "operation 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ReadJepsenJSON(strings.NewReader(tt.in), func(Event) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDetectFormat(t *testing.T) {
	for in, want := range map[string]string{
		`{"i":0,"proc":1,"type":"invoke","f":"acquire","t":1}`:                             "jsonl",
		`{"index":0,"process":1,"type":"invoke","f":"acquire","time":1}`:                   "jepsen-json",
		`[{"index":0,"process":1,"type":"invoke","f":"acquire"}]`:                          "jepsen-json",
		" \n[\n  {\"process\": 0, \"type\": \"ok\", \"f\": \"acquire\"}]":                  "jepsen-json",
		`{:process 0, :type :invoke, :f :acquire}`:                                         "edn",
		`[{:process 0 :type :ok :f :acquire}]`:                                             "edn",
		"\ufeff{\"proc\":1,\"type\":\"ok\",\"f\":\"acquire\",\"t\":1}":                     "jsonl",
		"; a comment\n{:process 0}":                                                        "edn",
		`{"value":{"k":1},"type":"invoke","f":"acquire","process":1}`:                      "jepsen-json",
		`{"error":"}","process":1,"type":"fail","f":"acquire"}`:                            "jepsen-json",
		"[\n  {\n    \"index\": 0,\n    \"type\": \"invoke\",\n    \"process\": 1\n  }\n]": "jepsen-json",
		"{\n  \"index\": 0,\n  \"type\": \"invoke\",\n  \"process\": 1\n}\n":               "jepsen-json",
	} {
		if got := DetectFormat([]byte(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

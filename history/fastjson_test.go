package history

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
)

// The fast path must decode exactly as encoding/json does.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	keys := []string{"k1", "a/b/c", `we"ird`, "é", ""}
	values := []string{``, `null`, `"x"`, `{"balance":97,"read":100}`, `[1,{"a":[2,3]}]`, `"a\"b"`}
	lines := []string{
		`{"i":1,"proc":2,"type":"ok","f":"acquire","t":3}`,
		`{"t":3,"f":"acquire","type":"ok","proc":2}`,
		` {"i":1,"proc":2,"type":"ok","f":"acquire","t":3}`,
		`{"i":01,"proc":2,"type":"ok","f":"acquire","t":3}`,
		`{"i":1,"proc":99999999999,"type":"ok","f":"acquire","t":3}`,
		`{"i":1,"proc":2,"type":"ok","f":"acquire","t":3,"extra":true}`,
		`{"i":1,"proc":2,"type":"ok","f":"acquire","value":{"a":1},"t":3}`,
		`{"i":1,"proc":2,"type":"ok","f":"acquire","token":-1,"t":3}`,
		`{"i":1,"proc":2,"type":"ok","f":"acquire","t":3,"reentry":false}`,
		`{"i":1,"proc":2,"type":"ok","f":"acquire","t":3,"reentry":tru}`,
	}
	for n := 0; n < 2000; n++ {
		ev := Event{Index: rng.Int63n(1e9), Proc: rng.Intn(100) - 1, Type: []Type{Invoke, OK, Fail, Info}[rng.Intn(4)],
			F: "acquire", Key: keys[rng.Intn(len(keys))], T: rng.Int63() - rng.Int63(), ValidUntil: rng.Int63n(3) * rng.Int63()}
		if v := values[rng.Intn(len(values))]; v != "" {
			ev.Value = json.RawMessage(v)
		}
		if rng.Intn(2) == 0 {
			tk := uint64(rng.Int63())
			ev.Token = &tk
		}
		if rng.Intn(4) == 0 {
			ev.Error = "timeout: \u00e9\n"
		}
		ev.Reentry = rng.Intn(3) == 0
		lines = append(lines, string(AppendJSON(nil, &ev)))
	}
	for _, line := range lines {
		var fast, slow Event
		errFast := decodeLine([]byte(line), &fast, 0)
		errSlow := json.Unmarshal([]byte(line), &slow)
		if (errFast == nil) != (errSlow == nil) {
			t.Fatalf("%s: fast err %v, encoding/json err %v", line, errFast, errSlow)
		}
		if slow.Value != nil && string(slow.Value) == "null" {
			slow.Value = nil
		}
		if errFast == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s:\n fast %+v\n json %+v", line, fast, slow)
		}
	}
}

func BenchmarkDecodeLine(b *testing.B) {
	ev := Event{Index: 123456, Proc: 12, Type: OK, F: Acquire, Key: "bench/redis-setnx-px-lua/c32/k0", T: 123456789012, ValidUntil: 133456789012}
	line := AppendJSON(nil, &ev)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var out Event
		if err := decodeLine(line, &out, 0); err != nil {
			b.Fatal(err)
		}
	}
}

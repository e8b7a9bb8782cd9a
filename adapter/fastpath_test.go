package adapter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The protocol's hot path reads and writes lines without encoding/json;
// these tests hold it to encoding/json's results, line for line.

var fastSeeds = []string{
	`{"type":"ready","protocol":1}`, `{"type":"ok","id":3}`, `{"type":"ok","id":3,"token":7,"valid_ms":1500}`,
	`{"type":"ok","id":3,"token":18446744073709551615,"valid_ms":1500.5,"extra":[1]}`, `{"type":"ok","id":3,"token":null}`,
	`{"type":"fail","id":4,"error":"not-held","reason":"expired"}`, `{"type":"info","id":5,"reason":"time\"out"}`,
	`{"type":"lost","lease":7,"reason":"session expired"}`, ` {"type":"ok","id":1} `, `{"type":"ok","id":1,"id":2}`,
	`{"type":"ok","Type":"fail","id":1}`, `{"type":"ok","id":01}`, `{"type":"ok","id":-0}`, `{"type":"ok","id":true}`,
	`{"type":"ok","id":1,"token":-3}`, `{"type":"ok","id":1,"token":"7"}`, `{"type":"ok","id":1,"valid_ms":-1}`,
	`{"type":"ok","id":99999999999999999999}`, `{"type":"fail","id":1,"error":"busy"}`, `{"type":7}`, `{}`, `{"type":"ok",}`,
	`{"type":"ok","id":1}}`, `{"type":"ok","id":1 }`, `{"type":"ok","id":1e3}`, `{"type":"ok","id":-}`, `{"type":"ok","reason":"é"}`,
}

func FuzzParseIsEncodingJSON(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s)
	}
	slow := func([]byte, *wireMessage) bool { return false }
	f.Fuzz(func(t *testing.T, line string) {
		fm, ferr := Parse([]byte(line))
		sm, serr := parse([]byte(line), slow)
		if fm != sm || (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
			t.Errorf("%q: fast %+v, %v; encoding/json %+v, %v", line, fm, ferr, sm, serr)
		}
	})
}

func FuzzRequestLineIsEncodingJSON(f *testing.F) {
	f.Add(int64(1), "acquire", "k0", int64(1000), true, int64(30000), int64(0))
	f.Add(int64(9), "release", "", int64(0), false, int64(0), int64(4))
	f.Add(int64(-2), "extend", "ké\"\\<&>\x00\x7f\xff", int64(-1), false, int64(1), int64(-4))
	f.Fuzz(func(t *testing.T, id int64, op, key string, ttl int64, wait bool, timeout, lease int64) {
		r := Request{Type: "request", ID: id, Op: op, Key: key, TTLMs: ttl, Wait: wait, TimeoutMs: timeout, Lease: lease}
		want, err := encodeLine(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.appendLine(nil); !bytes.Equal(got, want) {
			t.Fatalf("appendLine %s, json.Marshal %s", got, want)
		}
		// What an adapter reads back: the same as encoding/json reads.
		var viaJSON Request
		if err := json.Unmarshal(want[:len(want)-1], &viaJSON); err != nil {
			t.Fatal(err)
		}
		got, err := parseRequest(want[:len(want)-1])
		if err != nil || got != viaJSON {
			t.Fatalf("parseRequest(%s) = %+v, %v; encoding/json %+v", want, got, err, viaJSON)
		}
	})
}

func TestReplyLinesParse(t *testing.T) {
	for _, tc := range []struct {
		r    reply
		want Message
	}{
		{reply{Type: TypeReady, Protocol: 1}, Message{Type: TypeReady, Protocol: 1, ValidMs: -1}},
		{reply{Type: TypeOK, ID: 3, ValidMs: -1}, Message{Type: TypeOK, ID: 3, ValidMs: -1}},
		{reply{Type: TypeOK, ID: 3, Token: 0, HasToken: true, ValidMs: 0}, Message{Type: TypeOK, ID: 3, HasToken: true, ValidMs: 0}},
		{reply{Type: TypeOK, ID: 4, Token: 1<<64 - 1, HasToken: true, ValidMs: 1500}, Message{Type: TypeOK, ID: 4, Token: 1<<64 - 1, HasToken: true, ValidMs: 1500}},
		{reply{Type: TypeFail, ID: 5, Error: FailNotHeld, Reason: "gone \"now\"\n<é>"}, Message{Type: TypeFail, ID: 5, Error: FailNotHeld, Reason: "gone \"now\"\n<é>", ValidMs: -1}},
		{reply{Type: TypeInfo, ID: 6, Reason: "timeout"}, Message{Type: TypeInfo, ID: 6, Reason: "timeout", ValidMs: -1}},
		{reply{Type: TypeLost, Lease: 7, Reason: "session expired"}, Message{Type: TypeLost, Lease: 7, Reason: "session expired", ValidMs: -1}},
	} {
		line := tc.r.appendLine(nil)
		if !strings.HasSuffix(string(line), "}\n") || strings.Count(string(line), "\n") != 1 {
			t.Errorf("%+v: not one line: %q", tc.r, line)
		}
		if !json.Valid(line) {
			t.Errorf("%+v: not JSON: %s", tc.r, line)
		}
		if m, err := Parse(line[:len(line)-1]); err != nil || m != tc.want {
			t.Errorf("%+v wrote %s, read back %+v, %v; want %+v", tc.r, line, m, err, tc.want)
		}
	}
}

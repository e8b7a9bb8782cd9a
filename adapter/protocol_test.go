package adapter

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Message
		err  string // a part of the error; "" for none
	}{
		{line: `{"type":"ready","protocol":1}`, want: Message{Type: TypeReady, Protocol: 1, ValidMs: -1}},
		{line: `{"type":"error","reason":"no kazoo"}`, want: Message{Type: TypeError, Reason: "no kazoo", ValidMs: -1}},
		{line: `{"type":"ok","id":3}`, want: Message{Type: TypeOK, ID: 3, ValidMs: -1}},
		{line: `{"type":"ok","id":3,"token":18446744073709551615,"valid_ms":1500.5,"extra":[1]}`,
			want: Message{Type: TypeOK, ID: 3, Token: 1<<64 - 1, HasToken: true, ValidMs: 1500.5}},
		{line: `{"type":"ok","id":3,"token":null}`, want: Message{Type: TypeOK, ID: 3, ValidMs: -1}},
		{line: `{"type":"fail","id":4,"error":"not-held","reason":"expired"}`, want: Message{Type: TypeFail, ID: 4, Error: FailNotHeld, Reason: "expired", ValidMs: -1}},
		{line: `{"type":"info","id":5,"reason":"timeout"}`, want: Message{Type: TypeInfo, ID: 5, Reason: "timeout", ValidMs: -1}},
		{line: `{"type":"lost","lease":7,"reason":"session expired"}`, want: Message{Type: TypeLost, Lease: 7, Reason: "session expired", ValidMs: -1}},
		{line: ` {"type":"ok","id":1} `, want: Message{Type: TypeOK, ID: 1, ValidMs: -1}},
		{line: `{"type":"renewing","lease":7}`, want: Message{Type: TypeRenewing, Lease: 7, ValidMs: -1}},
		{line: `{"type":"renewed","lease":7,"valid_ms":900}`, want: Message{Type: TypeRenewed, Lease: 7, ValidMs: 900}},
		{line: `{"type":"renewed","lease":7}`, want: Message{Type: TypeRenewed, Lease: 7, ValidMs: -1}},
		{line: `{"type":"renewed","lease":7,"error":"not-held","reason":"gone"}`, want: Message{Type: TypeRenewed, Lease: 7, Error: RenewNotHeld, Reason: "gone", ValidMs: -1}},
		{line: `{"type":"renewed","lease":7,"error":"unknown"}`, want: Message{Type: TypeRenewed, Lease: 7, Error: RenewUnknown, ValidMs: -1}},

		{line: `hello`, err: "not a JSON object"},
		{line: ``, err: "not a JSON object"},
		{line: `[1,2]`, err: "not a JSON object"},
		{line: `"ok"`, err: "not a JSON object"},
		{line: `{"type":"ok","id":1`, err: "not a JSON object"},
		{line: `{"id":1}`, err: "without a type"},
		{line: `{"type":"granted","id":1}`, err: `type locklab does not know ("granted")`},
		{line: `{"type":"ready","protocol":2}`, err: "protocol 2 (locklab speaks 1)"},
		{line: `{"type":"ready"}`, err: "no protocol"},
		{line: `{"type":"ok"}`, err: "no id"},
		{line: `{"type":"ok","id":"1"}`, err: "not an integer"},
		{line: `{"type":"ok","id":1.5}`, err: "not an integer"},
		{line: `{"type":"ok","id":1,"token":-3}`, err: "token -3 is not a non-negative integer"},
		{line: `{"type":"ok","id":1,"token":2.5}`, err: "not a non-negative integer"},
		{line: `{"type":"ok","id":1,"token":"7"}`, err: "not a non-negative integer"},
		{line: `{"type":"ok","id":1,"valid_ms":-1}`, err: "valid_ms -1"},
		{line: `{"type":"fail","id":1}`, err: "no error code"},
		{line: `{"type":"fail","id":1,"error":"busy"}`, err: `error "busy"`},
		{line: `{"type":"lost"}`, err: "no lease"},
		{line: `{"type":"renewing"}`, err: "no lease"},
		{line: `{"type":"renewed","valid_ms":5}`, err: "no lease"},
		{line: `{"type":"renewed","lease":7,"error":"busy"}`, err: `error "busy", not one of not-held, unknown`},
		{line: `{"type":"renewed","lease":7,"valid_ms":-2}`, err: "valid_ms -2"},
		{line: `{"type":7}`, err: "not a JSON object"},
	} {
		m, err := Parse([]byte(tc.line))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%s): %v", tc.line, err)
		case tc.err == "" && m != tc.want:
			t.Errorf("Parse(%s) = %+v, want %+v", tc.line, m, tc.want)
		case tc.err != "" && err == nil:
			t.Errorf("Parse(%s) = %+v, want an error with %q", tc.line, m, tc.err)
		case tc.err != "" && !strings.Contains(err.Error(), tc.err):
			t.Errorf("Parse(%s): %v, want it to say %q", tc.line, err, tc.err)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("Parse(%s): error of more than one line: %q", tc.line, err)
		}
	}
}

func TestParseLongLineIsQuotedShort(t *testing.T) {
	_, err := Parse([]byte(strings.Repeat("x", 10000)))
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("error %q: want one short line", err)
	}
}

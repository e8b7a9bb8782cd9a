// Package adapter runs lock clients that are programs of their own: an
// adapter speaks the lock client protocol (docs/protocol.md) on its
// standard input and output, and this package makes each one an
// impls.Locker. It holds the protocol's codec, the Locker that runs one
// adapter process per client, the loader of approach files, and Serve, the
// protocol's reference adapter around a built-in approach.
package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/locklab/locklab/impls"
)

// Version is the protocol version this package speaks.
const Version = 1

// MaxLine is the longest line either side may write, its newline included.
const MaxLine = 1 << 20

// MaxKey is the longest lock key locklab sends (bytes); an empty or a
// longer key is refused before any request, as invalid-key, so an adapter
// never sees one (the built-in approaches refuse them likewise).
const MaxKey = 1024

// Operations a request asks for.
const (
	OpAcquire = "acquire"
	OpRelease = "release"
	OpExtend  = "extend"
	OpClose   = "close"
)

// Hello is locklab's first line to an adapter.
type Hello struct {
	Type     string              `json:"type"` // "hello"
	Protocol int                 `json:"protocol"`
	Approach string              `json:"approach"`
	Client   int                 `json:"client"`
	Servers  map[string][]string `json:"servers"`
	// DSN logs in to the first of the servers, for the databases; DSNs
	// to each of them, in their order.
	DSN  map[string]string   `json:"dsn"`
	DSNs map[string][]string `json:"dsns,omitempty"`
	// Sentinel names the primary the Sentinels watch, for redis-sentinel.
	Sentinel *impls.Sentinel `json:"sentinel,omitempty"`
	Options  map[string]any  `json:"options"`
}

// Request is one of locklab's requests to an adapter.
type Request struct {
	Type      string `json:"type"` // "request"
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Key       string `json:"key,omitempty"` // 1..MaxKey bytes: empty only where the op has none
	TTLMs     int64  `json:"ttl_ms"`
	Wait      bool   `json:"wait"`
	TimeoutMs int64  `json:"timeout_ms"`
	Lease     int64  `json:"lease,omitempty"`
}

// Kinds of messages an adapter sends.
const (
	TypeReady = "ready"
	TypeError = "error"
	TypeOK    = "ok"
	TypeFail  = "fail"
	TypeInfo  = "info"
	TypeLost  = "lost"
	// TypeRenewing and TypeRenewed tell a renewal the library made on its
	// own (a watchdog), as it is sent and once it is answered.
	TypeRenewing = "renewing"
	TypeRenewed  = "renewed"
)

// Error codes of a renewed event whose renewal did not renew.
const (
	RenewNotHeld = "not-held" // refused: the lease was gone
	RenewUnknown = "unknown"  // no answer came
)

// Error codes of a fail answer.
const (
	FailNotAcquired = "not-acquired"
	FailNotHeld     = "not-held"
	FailUnavailable = "unavailable"
	FailUnsupported = "unsupported"
	FailInvalidKey  = "invalid-key"
)

// Message is one line from an adapter, checked by Parse.
type Message struct {
	Type     string
	Protocol int    // ready
	ID       int64  // ok, fail, info
	Lease    int64  // lost, renewing, renewed
	Error    string // fail: one of the Fail codes; renewed: a Renew code or ""
	Reason   string // error, fail, info, lost
	// Token is an ok's fencing token; HasToken says whether it had one.
	Token    uint64
	HasToken bool
	// ValidMs is an ok's or a renewed's remaining lease time in
	// milliseconds; -1: none.
	ValidMs float64
}

// wireMessage is a line as it is written: fields are checked one by one.
type wireMessage struct {
	Type     *string         `json:"type"`
	Protocol json.RawMessage `json:"protocol"`
	ID       json.RawMessage `json:"id"`
	Lease    json.RawMessage `json:"lease"`
	Error    *string         `json:"error"`
	Reason   *string         `json:"reason"`
	Token    json.RawMessage `json:"token"`
	ValidMs  json.RawMessage `json:"valid_ms"`
}

// Parse checks one line from an adapter (without its newline). Its error
// says what the adapter did, as "printed ...", for a one-line report.
func Parse(line []byte) (Message, error) { return parse(line, scanFlat) }

// parse is Parse with the fast reader given (tests compare it with none).
func parse(line []byte, scan func([]byte, *wireMessage) bool) (Message, error) {
	m := Message{ValidMs: -1}
	var w wireMessage
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return m, fmt.Errorf("printed a line that is not a JSON object: %s", quote(line))
	}
	if !scan(trimmed, &w) {
		w = wireMessage{}
		if err := json.Unmarshal(trimmed, &w); err != nil {
			return m, fmt.Errorf("printed a line that is not a JSON object (%v): %s", err, quote(line))
		}
	}
	if w.Type == nil {
		return m, fmt.Errorf("printed a message without a type: %s", quote(line))
	}
	m.Type = *w.Type
	if w.Reason != nil {
		m.Reason = *w.Reason
	}
	var err error
	switch m.Type {
	case TypeReady:
		var p int64
		if p, err = integer(w.Protocol, "protocol"); err == nil && p != Version {
			err = fmt.Errorf("protocol %d (locklab speaks %d)", p, Version)
		}
		m.Protocol = int(p)
	case TypeError:
	case TypeOK, TypeFail, TypeInfo:
		if m.ID, err = integer(w.ID, "id"); err != nil {
			break
		}
		switch m.Type {
		case TypeOK:
			err = m.parseOK(w)
		case TypeFail:
			if w.Error == nil {
				err = fmt.Errorf("no error code")
				break
			}
			m.Error = *w.Error
			switch m.Error {
			case FailNotAcquired, FailNotHeld, FailUnavailable, FailUnsupported, FailInvalidKey:
			default:
				err = fmt.Errorf("error %q, not one of not-acquired, not-held, unavailable, unsupported, invalid-key", m.Error)
			}
		}
	case TypeLost, TypeRenewing:
		m.Lease, err = integer(w.Lease, "lease")
	case TypeRenewed:
		if m.Lease, err = integer(w.Lease, "lease"); err != nil {
			break
		}
		if w.Error != nil {
			m.Error = *w.Error
			if m.Error != RenewNotHeld && m.Error != RenewUnknown {
				err = fmt.Errorf("error %q, not one of not-held, unknown", m.Error)
				break
			}
		}
		m.ValidMs, err = parseValidMs(w.ValidMs)
	default:
		return m, fmt.Errorf("printed a message of a type locklab does not know (%q): %s", m.Type, quote(line))
	}
	if err != nil {
		return m, fmt.Errorf("printed a bad %q message (%v): %s", m.Type, err, quote(line))
	}
	return m, nil
}

func (m *Message) parseOK(w wireMessage) error {
	if present(w.Token) && isInteger(w.Token) {
		t, err := strconv.ParseUint(string(w.Token), 10, 64)
		if err != nil {
			return fmt.Errorf("token %s is not a non-negative integer", w.Token)
		}
		m.Token, m.HasToken = t, true
	} else if present(w.Token) {
		var n json.Number
		if err := json.Unmarshal(w.Token, &n); err != nil || !isNumber(w.Token) {
			return fmt.Errorf("token %s is not a non-negative integer", w.Token)
		}
		t, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil {
			return fmt.Errorf("token %s is not a non-negative integer", w.Token)
		}
		m.Token, m.HasToken = t, true
	}
	var err error
	m.ValidMs, err = parseValidMs(w.ValidMs)
	return err
}

// parseValidMs reads a valid_ms field: a non-negative number, or -1 when absent.
func parseValidMs(raw json.RawMessage) (float64, error) {
	if !present(raw) {
		return -1, nil
	}
	var v float64
	var err error
	if isInteger(raw) {
		v, err = strconv.ParseFloat(string(raw), 64) // as encoding/json reads a number
	} else {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil || v < 0 {
		return -1, fmt.Errorf("valid_ms %s is not a non-negative number", raw)
	}
	return v, nil
}

// isNumber says whether a present field is a JSON number (json.Number
// also takes a string holding one).
func isNumber(raw json.RawMessage) bool { return raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' }

// present says whether a field was there and not null.
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// integer reads a field that must be a JSON integer.
func integer(raw json.RawMessage, name string) (int64, error) {
	if !present(raw) {
		return 0, fmt.Errorf("no %s", name)
	}
	if isInteger(raw) {
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %s is not an integer", name, raw)
		}
		return v, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil || !isNumber(raw) {
		return 0, fmt.Errorf("%s %s is not an integer", name, raw)
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s is not an integer", name, raw)
	}
	return v, nil
}

// quote shows a line in an error message: quoted (one line, whatever it
// holds) and cut to a readable length.
func quote(b []byte) string {
	const max = 120
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}

// encodeLine is v as one JSON line.
func encodeLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// The lines of the protocol's hot path (a request, its answer) are read
// and written without reflection: at one client, encoding/json's cost
// was a measurable part of the protocol's overhead against the same lock
// in-process. Anything the fast paths do not take (escapes, nesting,
// whitespace, fractions, unknown keys) goes through encoding/json, so the
// result is always what encoding/json gives.

// scanFlat reads a flat object of the message's known keys whose values
// are plain strings or literals into w (a literal where a number belongs
// is judged as encoding/json's RawMessage would be); false: let
// encoding/json decide.
func scanFlat(b []byte, w *wireMessage) bool {
	return scanObject(b, func(key string, str, num []byte) bool {
		if str != nil {
			s := string(str)
			switch key {
			case "type":
				w.Type = &s
			case "error":
				w.Error = &s
			case "reason":
				w.Reason = &s
			default:
				return false // a string where a number belongs: encoding/json's error
			}
			return true
		}
		switch key {
		case "protocol":
			w.Protocol = num
		case "id":
			w.ID = num
		case "lease":
			w.Lease = num
		case "token":
			w.Token = num
		case "valid_ms":
			w.ValidMs = num
		default:
			return false
		}
		return true
	})
}

// scanObject walks a flat JSON object whose values are strings without
// escapes, integers or booleans, calling field with each (str non-nil for
// a string, else lit: the integer, true or false; both slices of b). It returns false, having called
// field for some fields only, on anything else or when field does.
func scanObject(b []byte, field func(key string, str, lit []byte) bool) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	if len(b) == 2 {
		return true
	}
	p := 1
	for {
		key, next, ok := plainString(b, p)
		if !ok || next >= len(b) || b[next] != ':' {
			return false
		}
		p = next + 1
		if p >= len(b) {
			return false
		}
		if b[p] == '"' {
			var str []byte
			if str, p, ok = plainString(b, p); !ok || !field(string(key), str, nil) {
				return false
			}
		} else {
			q := p
			for q < len(b) && (b[q] == '-' || b[q] >= '0' && b[q] <= '9' || b[q] >= 'a' && b[q] <= 'z') {
				q++
			}
			lit := b[p:q]
			if !isInteger(lit) && string(lit) != "true" && string(lit) != "false" || !field(string(key), nil, lit) {
				return false
			}
			p = q
		}
		switch {
		case p < len(b)-1 && b[p] == ',':
			p++
		case p == len(b)-1: // the closing brace
			return true
		default:
			return false
		}
	}
}

// plainString reads a JSON string at b[p] holding printable ASCII and no
// escapes; it returns its contents and where it ends.
func plainString(b []byte, p int) ([]byte, int, bool) {
	if p >= len(b) || b[p] != '"' {
		return nil, p, false
	}
	for q := p + 1; q < len(b); q++ {
		switch c := b[q]; {
		case c == '"':
			return b[p+1 : q], q + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, q, false
		}
	}
	return nil, p, false
}

// isInteger says whether raw is a JSON integer: an optional minus, then 0
// or digits without a leading zero.
func isInteger(raw []byte) bool {
	if len(raw) > 0 && raw[0] == '-' {
		raw = raw[1:]
	}
	if len(raw) == 0 || (raw[0] == '0' && len(raw) > 1) {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendLine appends r as one JSON line, as json.Marshal writes it.
func (r Request) appendLine(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, r.Type)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, r.ID, 10)
	b = append(b, `,"op":`...)
	b = appendString(b, r.Op)
	if r.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, r.Key)
	}
	b = append(b, `,"ttl_ms":`...)
	b = strconv.AppendInt(b, r.TTLMs, 10)
	b = append(b, `,"wait":`...)
	b = strconv.AppendBool(b, r.Wait)
	b = append(b, `,"timeout_ms":`...)
	b = strconv.AppendInt(b, r.TimeoutMs, 10)
	if r.Lease != 0 {
		b = append(b, `,"lease":`...)
		b = strconv.AppendInt(b, r.Lease, 10)
	}
	return append(b, "}\n"...)
}

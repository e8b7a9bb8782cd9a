package history

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// decodeLine decodes one JSONL event. Lines in the shape AppendJSON writes
// take a fast path; anything else (other field order, escapes, nested
// values it cannot skip, whitespace) falls back to encoding/json, so the
// result is always what encoding/json would give. A line without "i" has
// index next.
func decodeLine(raw []byte, ev *Event, next int64) error {
	if fastDecode(raw, ev, next) {
		return nil
	}
	*ev = Event{Index: next}
	if err := json.Unmarshal(raw, ev); err != nil {
		return err
	}
	if string(ev.Value) == "null" {
		ev.Value = nil // null and absent mean the same
	}
	return nil
}

// fastDecode handles flat objects of known keys with integer and plain
// string values, and a "value" that it skips as raw JSON.
func fastDecode(b []byte, ev *Event, next int64) bool {
	*ev = Event{Index: next}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	p := 1
	for p < len(b)-1 {
		if b[p] != '"' {
			return false
		}
		end := bytes.IndexByte(b[p+1:], '"')
		if end < 0 {
			return false
		}
		key := b[p+1 : p+1+end]
		p += end + 2
		if p >= len(b) || b[p] != ':' {
			return false
		}
		p++
		var ok bool
		switch string(key) {
		case "i":
			ev.Index, p, ok = fastInt(b, p)
		case "proc":
			var n int64
			n, p, ok = fastInt(b, p)
			ev.Proc = int(n)
			ok = ok && int64(ev.Proc) == n
		case "t":
			ev.T, p, ok = fastInt(b, p)
		case "valid_until":
			ev.ValidUntil, p, ok = fastInt(b, p)
		case "token":
			var n int64
			n, p, ok = fastInt(b, p)
			if ok && n >= 0 {
				u := uint64(n)
				ev.Token = &u
			} else {
				ok = false
			}
		case "type":
			var s string
			s, p, ok = fastString(b, p)
			ev.Type = Type(s)
		case "f":
			ev.F, p, ok = fastString(b, p)
		case "key":
			ev.Key, p, ok = fastString(b, p)
		case "error":
			ev.Error, p, ok = fastString(b, p)
		case "reentry":
			ok = p+4 <= len(b) && string(b[p:p+4]) == "true"
			ev.Reentry, p = ok, p+4
		case "value":
			var end int
			end, ok = skipValue(b, p)
			if ok {
				if !(end-p == 4 && string(b[p:end]) == "null") {
					ev.Value = append(json.RawMessage(nil), b[p:end]...)
				}
				p = end
			}
		default:
			return false // unknown or differently spelled: let encoding/json decide
		}
		if !ok {
			return false
		}
		if b[p] == ',' {
			p++
			continue
		}
		if b[p] == '}' && p == len(b)-1 {
			return true
		}
		return false
	}
	return p == len(b)-1
}

func fastInt(b []byte, p int) (int64, int, bool) {
	start := p
	if p < len(b) && b[p] == '-' {
		p++
	}
	digits := p
	for p < len(b) && b[p] >= '0' && b[p] <= '9' {
		p++
	}
	if p == digits || p-digits > 18 || (b[digits] == '0' && p-digits > 1) {
		return 0, p, false // empty, too long for a quick parse, or a leading zero
	}
	n, err := strconv.ParseInt(string(b[start:p]), 10, 64)
	return n, p, err == nil
}

func fastString(b []byte, p int) (string, int, bool) {
	if p >= len(b) || b[p] != '"' {
		return "", p, false
	}
	for q := p + 1; q < len(b); q++ {
		switch c := b[q]; {
		case c == '"':
			return string(b[p+1 : q]), q + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", q, false // escapes and non-ASCII: encoding/json
		}
	}
	return "", p, false
}

// skipValue finds the end of a JSON value without escapes in its strings.
func skipValue(b []byte, p int) (int, bool) {
	depth := 0
	for q := p; q < len(b); q++ {
		switch c := b[q]; c {
		case '"':
			r := bytes.IndexByte(b[q+1:], '"')
			if r < 0 || bytes.IndexByte(b[q+1:q+1+r], '\\') >= 0 {
				return 0, false
			}
			q += r + 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return q, q > p && json.Valid(b[p:q])
			}
			depth--
		case ',':
			if depth == 0 {
				return q, q > p && json.Valid(b[p:q])
			}
		}
	}
	return 0, false
}

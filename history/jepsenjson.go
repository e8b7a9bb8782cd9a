package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// jepsenOp is one operation of a Jepsen history as JSON (Jepsen's
// `history.json`, elle-cli's input): keywords lose their colon, and the
// nemesis is process "nemesis".
type jepsenOp struct {
	Index   *int64          `json:"index"`
	Time    *int64          `json:"time"`
	Type    string          `json:"type"`
	Process json.RawMessage `json:"process"`
	F       json.RawMessage `json:"f"`
	Value   json.RawMessage `json:"value"`
	Key     json.RawMessage `json:"key"`
	Error   json.RawMessage `json:"error"`
}

// ReadJepsenJSON reads a Jepsen history as JSON: one array of operation
// maps, or one map per line. Nemesis operations become nemesis events
// (their :f kept in the value, so fault windows pair start/stop).
func ReadJepsenJSON(r io.Reader, fn func(Event) error) error {
	br := bufio.NewReader(r)
	first, err := firstByte(br)
	if err != nil {
		return err
	}
	bounded := &boundedOps{r: br}
	dec := json.NewDecoder(bounded)
	bounded.dec = dec
	if first == '[' {
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("operation 1: %w", err)
		}
	}
	for n := int64(0); ; n++ {
		if first == '[' && !dec.More() {
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("after operation %d: %w", n, err)
			}
			return nil
		}
		var op jepsenOp
		if err := dec.Decode(&op); err != nil {
			if errors.Is(err, io.EOF) && first != '[' {
				return nil
			}
			return fmt.Errorf("operation %d: %w", n+1, err)
		}
		ev, err := op.event(n)
		if err != nil {
			return fmt.Errorf("operation %d: %w", n+1, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}

// maxJepsenOp bounds one operation, as ReadJSONL bounds a line: an endless
// value (a corrupt file, /dev/zero) is an error, not a growing buffer.
const maxJepsenOp = 16 << 20

// boundedOps feeds a json.Decoder and fails once the decoder has buffered
// more than maxJepsenOp bytes past the end of the last value it decoded.
type boundedOps struct {
	r    io.Reader
	dec  *json.Decoder
	read int64
}

func (b *boundedOps) Read(p []byte) (int, error) {
	if b.read-b.dec.InputOffset() > maxJepsenOp {
		return 0, fmt.Errorf("longer than %d bytes", maxJepsenOp)
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, nil
			}
			return 0, err
		}
		if b == 0xEF { // a UTF-8 byte order mark
			if bom, _ := br.Peek(2); bytes.Equal(bom, []byte{0xBB, 0xBF}) {
				br.Discard(2)
				continue
			}
		}
		if !strings.ContainsRune(" \t\r\n", rune(b)) {
			return b, br.UnreadByte()
		}
	}
}

func (op jepsenOp) event(n int64) (Event, error) {
	ev := Event{Index: n, T: n, Type: Type(strings.TrimPrefix(op.Type, ":"))}
	if op.Index != nil {
		ev.Index = *op.Index
	}
	if op.Time != nil {
		ev.T = *op.Time
	}
	var proc any
	if err := json.Unmarshal(op.Process, &proc); err != nil || proc == nil {
		return ev, errors.New("missing process")
	}
	switch p := proc.(type) {
	case float64:
		if p != math.Trunc(p) || p < math.MinInt32 || p > math.MaxInt32 {
			return ev, fmt.Errorf("process %v is not an integer", p)
		}
		ev.Proc = int(p)
	case string:
		if strings.TrimPrefix(p, ":") != "nemesis" {
			return ev, fmt.Errorf("process %q is not an integer or nemesis", p)
		}
		ev.Proc = -1
	default:
		return ev, fmt.Errorf("process %s is not an integer or nemesis", op.Process)
	}
	var f string
	if err := json.Unmarshal(op.F, &f); err != nil || f == "" {
		return ev, errors.New("missing f")
	}
	ev.F = strings.TrimPrefix(f, ":")
	value := op.Value
	if ev.Proc == -1 {
		// Keep the nemesis's own :f, as the EDN importer does.
		b, _ := json.Marshal(map[string]json.RawMessage{"f": mustJSON(ev.F), "value": orNull(op.Value)})
		ev.F, value = Nemesis, b
	} else if len(op.Key) > 0 && string(op.Key) != "null" {
		ev.Key = jsonKey(op.Key)
	} else if ev.F == Acquire || ev.F == Release {
		var tuple []json.RawMessage
		if json.Unmarshal(op.Value, &tuple) == nil && len(tuple) == 2 {
			ev.Key, value = jsonKey(tuple[0]), tuple[1]
		}
	}
	if len(value) > 0 && string(value) != "null" {
		ev.Value = value
	}
	if len(op.Error) > 0 && string(op.Error) != "null" {
		ev.Error = string(op.Error)
	}
	return ev, ev.Validate()
}

func jsonKey(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimPrefix(s, ":")
	}
	return string(raw)
}

func mustJSON(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

func orNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

// DetectFormat reads the start of a history and says which format it is:
// "edn" (Jepsen's EDN), "jepsen-json" (Jepsen's JSON: an array of maps or
// one map per line, with "process"), or "jsonl" (locklab's, with "proc").
func DetectFormat(head []byte) string {
	head = bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF})
	t := bytes.TrimLeft(head, " \t\r\n")
	array := bytes.HasPrefix(t, []byte("["))
	if array {
		t = bytes.TrimLeft(t[1:], " \t\r\n,")
	}
	if bytes.HasPrefix(t, []byte("{")) {
		rest := bytes.TrimLeft(t[1:], " \t\r\n,")
		if bytes.HasPrefix(rest, []byte(":")) {
			return "edn"
		}
		if array {
			return "jepsen-json" // locklab's JSONL is never one array
		}
		// The first object's keys, pretty-printed over several lines or
		// not, nested values and all.
		var first map[string]json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(t)).Decode(&first); err == nil {
			_, process := first["process"]
			_, proc := first["proc"]
			if process && !proc {
				return "jepsen-json"
			}
			return "jsonl"
		}
		// Cut short by the head's size, or not JSON: go by the first line.
		line := t
		if i := bytes.IndexByte(line, '\n'); i > 0 {
			line = line[:i]
		}
		if bytes.Contains(line, []byte(`"process"`)) && !bytes.Contains(line, []byte(`"proc"`)) {
			return "jepsen-json"
		}
		return "jsonl"
	}
	if bytes.HasPrefix(t, []byte(":")) || bytes.HasPrefix(t, []byte("#")) || bytes.HasPrefix(t, []byte(";")) {
		return "edn"
	}
	return "jsonl"
}

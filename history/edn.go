package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Keyword is an EDN keyword such as :invoke, without the colon.
type Keyword string

// ednParser reads the EDN subset Jepsen writes: maps, vectors, lists, sets,
// keywords, symbols, strings, characters, integers, floats, nil, booleans,
// comments, discards (#_) and tagged literals (#inst "...": the tag is
// dropped).
type ednParser struct {
	r    *bufio.Reader
	line int
	back []rune // pushed-back runes, last out first
}

// maxDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxDepth = 200

// maxToken bounds one token or string: a history holds short values, and
// a file of zeros (or a 300 MB string) is not a history.
const maxToken = 1 << 20

var errTooLong = fmt.Errorf("a token or string longer than %d bytes: not a history", maxToken)

func (p *ednParser) next() (rune, error) {
	if n := len(p.back); n > 0 {
		r := p.back[n-1]
		p.back = p.back[:n-1]
		return r, nil
	}
	r, size, err := p.r.ReadRune()
	if err != nil {
		return 0, err
	}
	if r == utf8.RuneError && size == 1 { // a real U+FFFD is 3 bytes, and fine
		return 0, errors.New("invalid UTF-8")
	}
	if r == '\n' {
		p.line++
	}
	return r, nil
}

func (p *ednParser) unread(r rune) { p.back = append(p.back, r) }

// skip passes white space (commas count), comments and #_ discards.
func (p *ednParser) skip(depth int) (rune, error) {
	for {
		r, err := p.next()
		if err != nil {
			return 0, err
		}
		switch {
		case r == ',' || unicode.IsSpace(r):
		case r == ';':
			for r != '\n' {
				if r, err = p.next(); err != nil {
					return 0, err
				}
			}
		case r == '#':
			r2, err := p.next()
			if err != nil {
				return 0, unexpectedEOF(err)
			}
			if r2 == '_' {
				if _, err := p.value(depth + 1); err != nil {
					return 0, err
				}
				continue
			}
			p.unread(r2)
			return '#', nil
		default:
			return r, nil
		}
	}
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

const delimiters = "{}[]()\",;"

func (p *ednParser) token(first rune) (string, error) {
	var sb strings.Builder
	sb.WriteRune(first)
	for {
		r, err := p.next()
		if errors.Is(err, io.EOF) {
			return sb.String(), nil
		}
		if err != nil {
			return "", err
		}
		if unicode.IsSpace(r) || strings.ContainsRune(delimiters, r) {
			p.unread(r)
			return sb.String(), nil
		}
		if sb.Len() > maxToken {
			return "", errTooLong
		}
		sb.WriteRune(r)
	}
}

// value reads one EDN value: map[string]any for maps (keys printed as
// their EDN text), []any for vectors, lists and sets, Keyword, string,
// int64, float64, bool or nil.
func (p *ednParser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	r, err := p.skip(depth)
	if err != nil {
		return nil, err
	}
	switch r {
	case '{':
		return p.mapValue(depth)
	case '[':
		return p.seq(']', depth)
	case '(':
		return p.seq(')', depth)
	case '#':
		r2, err := p.next()
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if r2 == '{' {
			return p.seq('}', depth)
		}
		if _, err := p.token(r2); err != nil { // a tag: #inst, #uuid, #jepsen...
			return nil, err
		}
		return p.value(depth + 1)
	case '"':
		return p.str()
	case '\\':
		c, err := p.next()
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		tok, err := p.token(c)
		if err != nil {
			return nil, err
		}
		return tok, nil
	case '}', ']', ')':
		return nil, fmt.Errorf("unexpected %q", r)
	}
	tok, err := p.token(r)
	if err != nil {
		return nil, err
	}
	return atom(tok)
}

func atom(tok string) (any, error) {
	switch {
	case tok == "nil":
		return nil, nil
	case tok == "true":
		return true, nil
	case tok == "false":
		return false, nil
	case tok[0] == ':':
		if len(tok) == 1 {
			return nil, errors.New("empty keyword")
		}
		return Keyword(tok[1:]), nil
	}
	num := strings.TrimSuffix(strings.TrimSuffix(tok, "N"), "M")
	if num == "" {
		return tok, nil // the symbol N or M
	}
	if c := num[0]; c >= '0' && c <= '9' || (c == '-' || c == '+') && len(num) > 1 && num[1] >= '0' && num[1] <= '9' {
		if n, err := strconv.ParseInt(num, 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("bad number %q", tok)
		}
		return f, nil
	}
	return tok, nil // a symbol
}

func (p *ednParser) str() (string, error) {
	var sb strings.Builder
	for {
		r, err := p.next()
		if err != nil {
			return "", unexpectedEOF(err)
		}
		if sb.Len() > maxToken {
			return "", errTooLong
		}
		switch r {
		case '"':
			return sb.String(), nil
		case '\\':
			e, err := p.next()
			if err != nil {
				return "", unexpectedEOF(err)
			}
			switch e {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case 'r':
				sb.WriteByte('\r')
			case 'u':
				var hex [4]rune
				for i := range hex {
					if hex[i], err = p.next(); err != nil {
						return "", unexpectedEOF(err)
					}
				}
				n, err := strconv.ParseUint(string(hex[:]), 16, 32)
				if err != nil {
					return "", fmt.Errorf("bad escape \\u%s", string(hex[:]))
				}
				sb.WriteRune(rune(n))
			default:
				sb.WriteRune(e)
			}
		default:
			sb.WriteRune(r)
		}
	}
}

func (p *ednParser) seq(end rune, depth int) ([]any, error) {
	out := []any{}
	for {
		r, err := p.skip(depth)
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if r == end {
			return out, nil
		}
		p.unread(r)
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		out = append(out, v)
	}
}

func (p *ednParser) mapValue(depth int) (map[string]any, error) {
	items, err := p.seq('}', depth)
	if err != nil {
		return nil, err
	}
	if len(items)%2 != 0 {
		return nil, errors.New("map with an odd number of forms")
	}
	m := make(map[string]any, len(items)/2)
	for i := 0; i < len(items); i += 2 {
		m[ednKey(items[i])] = items[i+1]
	}
	return m, nil
}

// ednKey prints a map key: keywords keep their colon so :f and "f" differ.
func ednKey(k any) string {
	switch k := k.(type) {
	case Keyword:
		return ":" + string(k)
	case string:
		return k
	default:
		b, _ := json.Marshal(toJSON(k))
		return string(b)
	}
}

// toJSON turns a parsed EDN value into something encoding/json can write:
// keywords become strings without the colon.
func toJSON(v any) any {
	switch v := v.(type) {
	case Keyword:
		return string(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[strings.TrimPrefix(k, ":")] = toJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toJSON(x)
		}
		return out
	default:
		return v
	}
}

// ReadEDN reads a Jepsen/Knossos history: operation maps one per line, or
// a vector (or list) of them, as Jepsen writes history.edn. A malformed
// form stops the read with an error naming its line.
//
// Mapping: :process (an integer; :nemesis becomes process -1), :type,
// :f, :time (ns) and :index map to the event's fields; :key, :token and
// :valid-until where present; :value becomes the JSON value. Jepsen's
// independent histories carry [key value] tuples in :value: for acquire
// and release such a tuple gives the key. Unknown keys are ignored.
func ReadEDN(r io.Reader, fn func(Event) error) error {
	p := &ednParser{r: bufio.NewReaderSize(r, 64<<10), line: 1}
	count := int64(0)
	for {
		start := p.line
		v, err := p.value(0)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", p.line, err)
		}
		ops := []any{v}
		if seq, ok := v.([]any); ok {
			ops = seq
		}
		for _, o := range ops {
			m, ok := o.(map[string]any)
			if !ok {
				return fmt.Errorf("line %d: want an operation map, got %T", start, o)
			}
			ev, err := ednEvent(m, count)
			if err != nil {
				return fmt.Errorf("line %d: %w", start, err)
			}
			count++
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
}

func ednEvent(m map[string]any, n int64) (Event, error) {
	ev := Event{Index: n, T: n}
	switch p := m[":process"].(type) {
	case int64:
		if p < math.MinInt32 || p > math.MaxInt32 {
			return ev, fmt.Errorf(":process %d out of range", p)
		}
		ev.Proc = int(p)
	case Keyword:
		ev.Proc = -1 // :nemesis
	case nil:
		return ev, errors.New("missing :process")
	default:
		return ev, fmt.Errorf(":process %v is not an integer or keyword", p)
	}
	t, ok := m[":type"].(Keyword)
	if !ok {
		return ev, errors.New("missing or non-keyword :type")
	}
	ev.Type = Type(t)
	switch f := m[":f"].(type) {
	case Keyword:
		ev.F = string(f)
	case string:
		ev.F = f
	default:
		return ev, errors.New("missing :f")
	}
	if ev.Proc == -1 {
		// Keep the nemesis's own :f (start-partition, stop...) in the
		// value, so fault windows can pair starts and stops.
		nf := ev.F
		ev.F = Nemesis
		b, _ := json.Marshal(map[string]any{"f": nf, "value": toJSON(m[":value"])})
		ev.Value = b
		m[":value"] = nil
	}
	if i, ok := m[":index"].(int64); ok {
		ev.Index = i
	}
	if t, ok := m[":time"].(int64); ok {
		ev.T = t
	}
	value := m[":value"]
	if k, ok := m[":key"]; ok && k != nil {
		ev.Key = keyString(k)
	} else if tuple, ok := value.([]any); ok && len(tuple) == 2 && (ev.F == Acquire || ev.F == Release) {
		ev.Key, value = keyString(tuple[0]), tuple[1]
	}
	if tok, ok := m[":token"].(int64); ok && tok >= 0 {
		u := uint64(tok)
		ev.Token = &u
	}
	if vu, ok := m[":valid-until"].(int64); ok {
		ev.ValidUntil = vu
	}
	if e, ok := m[":error"]; ok && e != nil {
		b, _ := json.Marshal(toJSON(e))
		ev.Error = string(b)
	}
	if value != nil {
		b, err := json.Marshal(toJSON(value))
		if err != nil {
			return ev, fmt.Errorf(":value: %w", err)
		}
		ev.Value = b
	}
	return ev, ev.Validate()
}

func keyString(k any) string {
	switch k := k.(type) {
	case Keyword:
		return string(k)
	case string:
		return k
	default:
		b, _ := json.Marshal(toJSON(k))
		return string(b)
	}
}

// ReadFileFormat reads a history file as "jsonl" (locklab's), "edn" or
// "jepsen-json" (Jepsen's); "" detects the format from the file's start.
func ReadFileFormat(r io.Reader, format, name string, fn func(Event) error) error {
	return readFormat(r, format, nil, fn)
}

// readFormat is ReadFileFormat telling begin (when set) the format it
// reads, detected or given, before the first event.
func readFormat(r io.Reader, format string, begin func(string), fn func(Event) error) error {
	r, err := decompress(r)
	if err != nil {
		return err
	}
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(64 << 10)
	if format == "" {
		format = DetectFormat(head)
	}
	if len(head) >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF {
		br.Discard(3) // a UTF-8 byte order mark, as some editors write, whatever the format
	}
	r = br
	read := map[string]func(io.Reader, func(Event) error) error{
		"jsonl": ReadJSONL, "edn": ReadEDN, "jepsen-json": ReadJepsenJSON, "json": ReadJepsenJSON}[format]
	if read == nil {
		return fmt.Errorf("unknown history format %q (want jsonl, edn or jepsen-json)", format)
	}
	if begin != nil {
		begin(format)
	}
	return read(r, fn)
}

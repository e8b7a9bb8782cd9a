package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// Writer streams events as JSONL to a file. It assigns each event its index
// and keeps the lines in memory; its own goroutine hands them to the file
// (through the compressor) at least every FlushInterval, so a recording
// client never waits on a write or on compression, a crash loses at most
// that much, and a Ctrl-C (which ends in Close) loses nothing.
type Writer struct {
	mu      sync.Mutex
	next    int64
	pending []byte // recorded lines not yet handed to the file
	spare   []byte // the buffer the last flush emptied, for reuse
	err     error

	wmu sync.Mutex    // one flush at a time; only a flush touches out
	f   *os.File      //
	zw  *zstd.Encoder // nil for a plain .jsonl
	out io.Writer     // zw or f

	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	close sync.Once
}

// FlushInterval bounds how long a recorded event may sit in memory.
const FlushInterval = 200 * time.Millisecond

// kickSize is how much may pile up before the flusher is woken early.
const kickSize = 1 << 20

// maxPending is how much may pile up before a recording client flushes
// itself.
const maxPending = 32 << 20

// Create opens path for writing (truncating it) and starts the flusher. A
// path ending in .zst is written zstd-compressed, as one frame whose blocks
// end at each flush: a run killed between flushes leaves a file that reads
// (here and with zstd -dc) up to the last flush.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create history: %w", err)
	}
	w := &Writer{f: f, out: f, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if compressed(path) {
		// The flusher compresses on its own goroutine: one encoder
		// goroutine more would only add hand-offs. The fastest level
		// leaves the run the most CPU.
		w.zw, err = zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("create history: %w", err)
		}
		w.out = w.zw
	}
	go w.flushLoop()
	return w, nil
}

// flush hands what was recorded to the file, outside mu; ended also ends
// the compressor's open block, so what is on disk reads up to here.
func (w *Writer) flush(ended bool) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	buf, err := w.pending, w.err
	w.pending = w.spare[:0]
	w.mu.Unlock()
	if err == nil && len(buf) > 0 {
		_, err = w.out.Write(buf)
	}
	if err == nil && ended && w.zw != nil {
		err = w.zw.Flush()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spare = buf[:0]
	if w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *Writer) flushLoop() {
	defer close(w.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.flush(true)
		case <-w.kick:
			w.flush(false)
		}
	}
}

// Record appends ev, setting its Index. It returns the event as recorded:
// its times to the microsecond (Resolution), the index left out of the line
// (it is the line's place: readers count it).
func (w *Writer) Record(ev Event) Event {
	ev.T, ev.ValidUntil = ToResolution(ev.T), ToResolution(ev.ValidUntil)
	w.mu.Lock()
	ev.Index = w.next
	w.next++
	if w.err == nil {
		w.pending = appendJSON(w.pending, &ev, false)
		w.pending = append(w.pending, '\n')
		if len(w.pending) >= kickSize {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
	full := len(w.pending) >= maxPending
	w.mu.Unlock()
	if full {
		w.flush(false) // the flusher fell behind: memory stays bounded
	}
	return ev
}

// Err reports the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes, ends the compressed frame, syncs and closes the file.
func (w *Writer) Close() error {
	var err error
	w.close.Do(func() {
		close(w.stop)
		<-w.done
		ferr := w.flush(true)
		if ferr == nil && w.zw != nil {
			ferr = w.zw.Close()
		}
		if ferr == nil {
			ferr = w.f.Sync()
		}
		cerr := w.f.Close()
		w.mu.Lock()
		if w.err == nil {
			w.err = ferr
		}
		err = errors.Join(w.err, cerr)
		w.mu.Unlock()
	})
	return err
}

// Resolution is what a recorded time is rounded down to. A history's times
// are nanoseconds, but their last three digits are what a compressor cannot
// predict: at a microsecond a run's history is a quarter smaller compressed
// (docs/history.md), and no lock operation locklab times is that short.
const Resolution = 1000

// ToResolution rounds t (nanoseconds) down to Resolution.
func ToResolution(t int64) int64 {
	r := t % Resolution
	if r < 0 {
		r += Resolution
	}
	return t - r
}

// AppendJSON appends ev as one JSON object, without reflection: recording
// must cost the workload almost nothing.
func AppendJSON(b []byte, ev *Event) []byte { return appendJSON(b, ev, true) }

// appendJSON appends ev; withIndex false leaves "i" out, for a file whose
// lines are its events in index order from 0, where a reader counts it.
func appendJSON(b []byte, ev *Event, withIndex bool) []byte {
	b = append(b, '{')
	if withIndex {
		b = append(b, `"i":`...)
		b = strconv.AppendInt(b, ev.Index, 10)
		b = append(b, ',')
	}
	b = append(b, `"proc":`...)
	b = strconv.AppendInt(b, int64(ev.Proc), 10)
	b = append(b, `,"type":`...)
	b = appendString(b, string(ev.Type))
	b = append(b, `,"f":`...)
	b = appendString(b, ev.F)
	if ev.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, ev.Key)
	}
	if len(ev.Value) > 0 {
		b = append(b, `,"value":`...)
		b = append(b, ev.Value...)
	}
	if ev.Token != nil {
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, *ev.Token, 10)
	}
	if ev.ValidUntil != 0 {
		b = append(b, `,"valid_until":`...)
		b = strconv.AppendInt(b, ev.ValidUntil, 10)
	}
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, ev.T, 10)
	if ev.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, ev.Error)
	}
	if ev.Reentry {
		b = append(b, `,"reentry":true`...)
	}
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s) // rare: escape properly
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ReadJSONL calls fn for every event in r. A malformed line stops the read
// with an error naming its line number.
func ReadJSONL(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	next := int64(0) // the index of a line without "i": the one before's plus one
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if len(raw) == 0 {
			continue
		}
		// encoding/json would quietly turn invalid UTF-8 into U+FFFD: a
		// corrupt file must be refused, not read as other keys.
		if !utf8.Valid(raw) {
			return fmt.Errorf("line %d: not valid UTF-8", line)
		}
		var ev Event
		if err := decodeLine(raw, &ev, next); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		next = ev.Index + 1
		if err := ev.Validate(); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}

// ReadFile reads every event of a JSONL history file, zstd-compressed or
// not.
func ReadFile(path string) ([]Event, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []Event
	err = ReadJSONL(f, func(ev Event) error { evs = append(evs, ev); return nil })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return evs, nil
}

package adapter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// Serve is the protocol's reference adapter: it serves approach a (a
// built-in one) to the locklab at the other end of in and out, one
// client, until `close` or the end of in. It is what `locklab adapt`
// runs: the protocol's cost measured against the same lock in-process,
// and a well-behaved adapter for tests.
func Serve(ctx context.Context, a impls.Approach, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	w := &lineWriter{w: out}
	if !sc.Scan() {
		return fmt.Errorf("no hello: %v", sc.Err())
	}
	var h Hello
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Type != "hello" {
		return fmt.Errorf("first line is not a hello: %.100q", sc.Bytes())
	}
	if h.Protocol != Version {
		_ = w.send(reply{Type: TypeError, Reason: fmt.Sprintf("protocol %d: this adapter speaks %d", h.Protocol, Version)})
		return fmt.Errorf("protocol %d", h.Protocol)
	}
	clk := &clock.Skewable{}
	l, err := a.New(ctx, impls.Env{Endpoints: endpointsOf(h), Clock: clk, ClientID: h.Client})
	if err != nil {
		_ = w.send(reply{Type: TypeError, Reason: err.Error()})
		return err
	}
	s := &server{l: l, w: w, clk: clk, leases: map[int64]impls.Lease{}, stopLost: map[int64]func(){}, relays: map[int64]*relay{}}
	defer s.stopAll()
	if err := w.send(reply{Type: TypeReady, Protocol: Version}); err != nil {
		l.Close()
		return err
	}
	for sc.Scan() {
		r, err := parseRequest(sc.Bytes())
		if err != nil {
			l.Close()
			return fmt.Errorf("bad request: %.100q", sc.Bytes())
		}
		if r.Op == OpClose {
			break
		}
		if err := w.send(s.serve(ctx, r)); err != nil {
			l.Close()
			return err
		}
		s.answered(r.ID)
	}
	// Whether by close or the end of in: drop the connections, release
	// nothing, as a crashed holder would.
	return l.Close()
}

// server is one client's state in Serve.
type server struct {
	l        impls.Locker
	w        *lineWriter
	clk      clock.Clock
	mu       sync.Mutex
	leases   map[int64]impls.Lease // by the acquire's id
	stopLost map[int64]func()
	relays   map[int64]*relay // an acquire's renewals, until its answer is out
}

// relay tells one lease's renewals as events, once the acquire's ok is
// out (a renewal the watchdog made before it is not told, nor its answer).
type relay struct {
	w       *lineWriter
	clk     clock.Clock
	id      int64
	sentAt  time.Time // the told renewal's, for valid_ms
	mu      sync.Mutex
	open    bool
	skipped bool // a renewal was not told: neither is its answer
}

func (r *relay) renewed(x impls.Renewal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open || (x.Done && r.skipped) {
		r.skipped = !x.Done
		return
	}
	ev := reply{Type: TypeRenewing, Lease: r.id, ValidMs: -1}
	if !x.Done {
		r.sentAt = r.clk.Now()
	} else {
		ev.Type = TypeRenewed
		switch {
		case errors.Is(x.Err, impls.ErrNotHeld):
			ev.Error, ev.Reason = RenewNotHeld, x.Err.Error()
		case x.Err != nil:
			ev.Error, ev.Reason = RenewUnknown, x.Err.Error()
		case !x.ValidUntil.IsZero():
			ev.ValidMs = max(x.ValidUntil.Sub(r.sentAt).Milliseconds(), 0)
		}
	}
	_ = r.w.send(ev)
}

// answered opens the relay of the request id, if it was an acquire.
func (s *server) answered(id int64) {
	s.mu.Lock()
	r := s.relays[id]
	delete(s.relays, id)
	s.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		r.open = true
		r.mu.Unlock()
	}
}

// serve answers one request.
func (s *server) serve(ctx context.Context, r Request) reply {
	received := s.clk.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(r.TimeoutMs)*time.Millisecond)
	defer cancel()
	answer := reply{Type: TypeOK, ID: r.ID, ValidMs: -1}
	switch r.Op {
	case OpAcquire:
		rel := &relay{w: s.w, clk: s.clk, id: r.ID}
		s.mu.Lock()
		s.relays[r.ID] = rel
		s.mu.Unlock()
		ls, err := s.l.Acquire(ctx, r.Key, impls.AcquireOptions{TTL: time.Duration(r.TTLMs) * time.Millisecond, Try: !r.Wait, OnRenew: rel.renewed})
		if err != nil {
			return failure(r.ID, err)
		}
		answer.Token, answer.HasToken = ls.Token()
		answer.ValidMs = validMs(ls, received)
		s.hold(r.ID, ls)
	case OpRelease, OpExtend:
		s.mu.Lock()
		ls := s.leases[r.Lease]
		s.mu.Unlock()
		if ls == nil {
			return reply{Type: TypeFail, ID: r.ID, Error: FailNotHeld, Reason: fmt.Sprintf("no lease %d", r.Lease)}
		}
		if r.Op == OpExtend {
			if err := ls.Extend(ctx, time.Duration(r.TTLMs)*time.Millisecond); err != nil {
				return failure(r.ID, err)
			}
			answer.ValidMs = validMs(ls, received)
			return answer
		}
		err := ls.Release(ctx)
		if err == nil || errors.Is(err, impls.ErrNotHeld) {
			s.forget(r.Lease)
		}
		if err != nil {
			return failure(r.ID, err)
		}
	default:
		return reply{Type: TypeFail, ID: r.ID, Error: FailUnsupported, Reason: fmt.Sprintf("unknown op %q", r.Op)}
	}
	return answer
}

// validMs says how long ls has left, counted from when the request came
// (locklab counts from when it sent it, a little earlier: it errs short);
// -1 where it does not expire.
func validMs(ls impls.Lease, received time.Time) int64 {
	if vu := ls.ValidUntil(); !vu.IsZero() {
		return max(vu.Sub(received).Milliseconds(), 0)
	}
	return -1
}

// hold keeps ls under id and, where the approach can tell, sends `lost`
// when it is gone.
func (s *server) hold(id int64, ls impls.Lease) {
	stop := func() {}
	if lost := ls.Lost(); lost != nil {
		done := make(chan struct{})
		go func() {
			select {
			case <-lost:
				_ = s.w.send(reply{Type: TypeLost, Lease: id, Reason: "the lock client says the lock is gone"})
			case <-done:
			}
		}()
		stop = sync.OnceFunc(func() { close(done) })
	}
	s.mu.Lock()
	s.leases[id], s.stopLost[id] = ls, stop
	s.mu.Unlock()
}

func (s *server) forget(id int64) {
	s.mu.Lock()
	stop := s.stopLost[id]
	delete(s.leases, id)
	delete(s.stopLost, id)
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (s *server) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, stop := range s.stopLost {
		stop()
	}
}

// failure is the answer an impls error stands for: what is not certainly
// a failure is info.
func failure(id int64, err error) reply {
	for _, f := range []struct {
		err  error
		code string
	}{{impls.ErrNotAcquired, FailNotAcquired}, {impls.ErrNotHeld, FailNotHeld}, {impls.ErrUnavailable, FailUnavailable},
		{impls.ErrUnsupported, FailUnsupported}, {impls.ErrInvalidKey, FailInvalidKey}} {
		if errors.Is(err, f.err) {
			return reply{Type: TypeFail, ID: id, Error: f.code, Reason: err.Error()}
		}
	}
	return reply{Type: TypeInfo, ID: id, Reason: err.Error()}
}

// endpointsOf is the hello's servers as a built-in approach reads them.
func endpointsOf(h Hello) impls.Endpoints {
	ep := impls.Endpoints{}
	for kind, addrs := range h.Servers {
		dsns := h.DSNs[kind]
		if dsns == nil && h.DSN[kind] != "" {
			dsns = []string{h.DSN[kind]} // from a locklab before dsns
		}
		ep[impls.Server(kind)] = impls.Servers{Addrs: addrs, DSNs: dsns, Sentinel: h.Sentinel}
	}
	return ep
}

// lineWriter writes whole JSON lines, one at a time (answers and lost
// events come from different goroutines).
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (w *lineWriter) send(r reply) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = r.appendLine(w.buf[:0])
	_, err := w.w.Write(w.buf)
	return err
}

// reply is one line an adapter writes; the zero values of ID, Lease and
// Protocol, an empty Error or Reason, and a ValidMs below 0 are left out.
type reply struct {
	Type     string
	ID       int64
	Lease    int64
	Protocol int
	Error    string
	Reason   string
	Token    uint64
	HasToken bool
	ValidMs  int64
}

func (r reply) appendLine(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, r.Type)
	for _, f := range []struct {
		name string
		v    int64
	}{{`,"id":`, r.ID}, {`,"lease":`, r.Lease}, {`,"protocol":`, int64(r.Protocol)}} {
		if f.v != 0 {
			b = append(b, f.name...)
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, r.Error)
	}
	if r.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, r.Reason)
	}
	if r.HasToken {
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, r.Token, 10)
	}
	if r.ValidMs >= 0 && (r.Type == TypeOK || r.Type == TypeRenewed) {
		b = append(b, `,"valid_ms":`...)
		b = strconv.AppendInt(b, r.ValidMs, 10)
	}
	return append(b, "}\n"...)
}

// parseRequest reads one request line: the shape locklab writes without
// reflection, anything else through encoding/json.
func parseRequest(line []byte) (Request, error) {
	var r Request
	ok := scanObject(line, func(key string, str, lit []byte) bool {
		if str != nil {
			switch key {
			case "type":
				r.Type = string(str)
			case "op":
				r.Op = string(str)
			case "key":
				r.Key = string(str)
			default:
				return false
			}
			return true
		}
		if key == "wait" && !isInteger(lit) {
			r.Wait = string(lit) == "true"
			return true
		}
		n, err := strconv.ParseInt(string(lit), 10, 64)
		if err != nil {
			return false
		}
		switch key {
		case "id":
			r.ID = n
		case "ttl_ms":
			r.TTLMs = n
		case "timeout_ms":
			r.TimeoutMs = n
		case "lease":
			r.Lease = n
		default:
			return false
		}
		return true
	})
	if ok {
		return r, nil
	}
	r = Request{}
	err := json.Unmarshal(line, &r)
	return r, err
}

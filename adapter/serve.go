package adapter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
		_ = w.send(map[string]any{"type": TypeError, "reason": fmt.Sprintf("protocol %d: this adapter speaks %d", h.Protocol, Version)})
		return fmt.Errorf("protocol %d", h.Protocol)
	}
	clk := &clock.Skewable{}
	l, err := a.New(ctx, impls.Env{Endpoints: endpointsOf(h), Clock: clk, ClientID: h.Client})
	if err != nil {
		_ = w.send(map[string]any{"type": TypeError, "reason": err.Error()})
		return err
	}
	s := &server{l: l, w: w, clk: clk, leases: map[int64]impls.Lease{}, stopLost: map[int64]func(){}}
	defer s.stopAll()
	if err := w.send(map[string]any{"type": TypeReady, "protocol": Version}); err != nil {
		l.Close()
		return err
	}
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
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
}

// serve answers one request.
func (s *server) serve(ctx context.Context, r Request) map[string]any {
	received := s.clk.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(r.TimeoutMs)*time.Millisecond)
	defer cancel()
	answer := map[string]any{"type": TypeOK, "id": r.ID}
	switch r.Op {
	case OpAcquire:
		ls, err := s.l.Acquire(ctx, r.Key, impls.AcquireOptions{TTL: time.Duration(r.TTLMs) * time.Millisecond, Try: !r.Wait})
		if err != nil {
			return failure(r.ID, err)
		}
		if t, ok := ls.Token(); ok {
			answer["token"] = t
		}
		s.validMs(answer, ls, received)
		s.hold(r.ID, ls)
	case OpRelease, OpExtend:
		s.mu.Lock()
		ls := s.leases[r.Lease]
		s.mu.Unlock()
		if ls == nil {
			return map[string]any{"type": TypeFail, "id": r.ID, "error": FailNotHeld, "reason": fmt.Sprintf("no lease %d", r.Lease)}
		}
		if r.Op == OpExtend {
			if err := ls.Extend(ctx, time.Duration(r.TTLMs)*time.Millisecond); err != nil {
				return failure(r.ID, err)
			}
			s.validMs(answer, ls, received)
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
		return map[string]any{"type": TypeFail, "id": r.ID, "error": FailUnsupported, "reason": fmt.Sprintf("unknown op %q", r.Op)}
	}
	return answer
}

// validMs says how long ls has left, counted from when the request came
// (locklab counts from when it sent it, a little earlier: it errs short).
func (s *server) validMs(answer map[string]any, ls impls.Lease, received time.Time) {
	if vu := ls.ValidUntil(); !vu.IsZero() {
		answer["valid_ms"] = max(vu.Sub(received).Milliseconds(), 0)
	}
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
				_ = s.w.send(map[string]any{"type": TypeLost, "lease": id, "reason": "the lock client says the lock is gone"})
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
func failure(id int64, err error) map[string]any {
	for _, f := range []struct {
		err  error
		code string
	}{{impls.ErrNotAcquired, FailNotAcquired}, {impls.ErrNotHeld, FailNotHeld}, {impls.ErrUnavailable, FailUnavailable},
		{impls.ErrUnsupported, FailUnsupported}, {impls.ErrInvalidKey, FailInvalidKey}} {
		if errors.Is(err, f.err) {
			return map[string]any{"type": TypeFail, "id": id, "error": f.code, "reason": err.Error()}
		}
	}
	return map[string]any{"type": TypeInfo, "id": id, "reason": err.Error()}
}

// endpointsOf is the hello's servers as a built-in approach reads them.
func endpointsOf(h Hello) impls.Endpoints {
	ep := impls.Endpoints{Redis: h.Servers[string(impls.Redis)], ZooKeeper: h.Servers[string(impls.ZooKeeper)],
		Etcd: h.Servers[string(impls.Etcd)], MySQL: h.DSN[string(impls.MySQL)], Postgres: h.DSN[string(impls.Postgres)],
		RedisSentinels: h.Servers[string(impls.RedisSentinel)]}
	if h.Sentinel != nil {
		ep.RedisSentinelMaster, ep.RedisSentinelRoutes = h.Sentinel.Master, h.Sentinel.Routes
	}
	return ep
}

// lineWriter writes whole JSON lines, one at a time (answers and lost
// events come from different goroutines).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lineWriter) send(v any) error {
	b, err := encodeLine(v)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(b)
	return err
}

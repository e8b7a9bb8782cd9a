// Package goadapter speaks the lock client protocol (docs/protocol.md) for
// an adapter around a Go lock library pinned to one version. It is a module
// of its own, with no requirements, so that an adapter's go.mod pins only
// its library: requiring locklab's module would raise the library to
// locklab's version.
package goadapter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Hello is locklab's handshake: the servers to connect to and the
// approach file's options.
type Hello struct {
	Client  int                 `json:"client"`
	Servers map[string][]string `json:"servers"`
	Options map[string]any      `json:"options"`
}

// Locker is one client of a library.
type Locker interface {
	// Acquire takes key with a lease of ttl (0: the library's default);
	// try asks for exactly one attempt. ctx ends when locklab stops
	// waiting for the answer.
	Acquire(ctx context.Context, key string, ttl time.Duration, try bool) (Held, error)
}

// Held is a granted lock.
type Held interface {
	Release(ctx context.Context) error
}

// What an error wraps says what to answer; any other error is "info": it
// may or may not have happened.
var (
	ErrNotAcquired = errors.New("not-acquired")
	ErrNotHeld     = errors.New("not-held")
	ErrUnavailable = errors.New("unavailable")
	ErrUnsupported = errors.New("unsupported")
)

type request struct {
	Type      string `json:"type"`
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Key       string `json:"key"`
	TTLMs     int64  `json:"ttl_ms"`
	Wait      bool   `json:"wait"`
	TimeoutMs int64  `json:"timeout_ms"`
	Lease     int64  `json:"lease"`
}

// out writes one message a line.
type out struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *out) send(msg map[string]any) {
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err) // only maps of strings and numbers are sent
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Write(append(b, '\n'))
	o.w.Flush()
}

// Run serves the protocol on stdin and stdout until locklab sends close,
// with the Locker newLocker makes from the handshake. It does not return.
func Run(newLocker func(Hello) (Locker, error)) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	o := &out{w: bufio.NewWriter(os.Stdout)}
	if !in.Scan() {
		os.Exit(1)
	}
	var h Hello
	if err := json.Unmarshal(in.Bytes(), &h); err != nil {
		o.send(map[string]any{"type": "error", "reason": fmt.Sprintf("handshake: %v", err)})
		os.Exit(1)
	}
	l, err := newLocker(h)
	if err != nil {
		o.send(map[string]any{"type": "error", "reason": err.Error()})
		os.Exit(1)
	}
	o.send(map[string]any{"type": "ready", "protocol": 1})
	held := map[int64]Held{}
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "goadapter: bad request %q: %v\n", in.Bytes(), err)
			os.Exit(1)
		}
		if r.Op == "close" {
			// As a crashed holder: nothing released.
			os.Exit(0)
		}
		o.send(answer(l, held, r))
	}
	os.Exit(0)
}

// answer runs one request under its deadline. A library call still busy at
// the deadline is left to go on: the answer is then info.
func answer(l Locker, held map[int64]Held, r request) map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.TimeoutMs)*time.Millisecond)
	defer cancel()
	type result struct {
		h   Held
		err error
	}
	done := make(chan result, 1)
	h, isHeld := held[r.Lease]
	go func() {
		switch r.Op {
		case "acquire":
			h, err := l.Acquire(ctx, r.Key, time.Duration(r.TTLMs)*time.Millisecond, !r.Wait)
			done <- result{h, err}
		case "release":
			if !isHeld {
				done <- result{err: fmt.Errorf("lease %d: %w", r.Lease, ErrNotHeld)}
				return
			}
			done <- result{err: h.Release(ctx)}
		default:
			done <- result{err: fmt.Errorf("%s: %w", r.Op, ErrUnsupported)}
		}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(time.Duration(r.TimeoutMs)*time.Millisecond + 500*time.Millisecond):
		res.err = fmt.Errorf("%s: no answer from the library in time", r.Op)
	}
	if r.Op == "release" {
		delete(held, r.Lease)
	}
	if res.err != nil {
		for _, kind := range []error{ErrNotAcquired, ErrNotHeld, ErrUnavailable, ErrUnsupported} {
			if errors.Is(res.err, kind) {
				return map[string]any{"type": "fail", "id": r.ID, "error": kind.Error(), "reason": res.err.Error()}
			}
		}
		return map[string]any{"type": "info", "id": r.ID, "reason": res.err.Error()}
	}
	if r.Op == "acquire" {
		held[r.ID] = res.h
	}
	return map[string]any{"type": "ok", "id": r.ID}
}

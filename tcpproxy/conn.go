package tcpproxy

import (
	"bytes"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// conn is one client's connection and the proxy's connection to the
// server for it. Closing either side's stream closes both.
type conn struct {
	p              *Proxy
	client, server net.Conn
	pipes          [2]*pipe
	done           chan struct{} // closed by close
	once           sync.Once
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.server.Close()
		for _, pi := range c.pipes {
			pi.mu.Lock()
			pi.closed = true
			pi.room.Broadcast()
			for _, w := range pi.waiters {
				close(w.done)
			}
			pi.waiters = nil
			pi.mu.Unlock()
		}
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
}

// chunk is what one read brought, or the sender's close.
type chunk struct {
	data []byte
	at   time.Time // when it was read: a Slow toxic delays from here
	eof  bool
}

// pipe is one direction of a connection: a reader that writes straight on
// while the direction has no toxic, else queues for the writer.
type pipe struct {
	c        *conn
	dir      Direction
	src, dst net.Conn
	wake     chan struct{} // the writer has a chunk to take (capacity 1)

	mu      sync.Mutex
	room    *sync.Cond // the queue shrank, or the connection closed
	queue   []chunk
	bytes   int
	writing bool   // a chunk is being written, straight or by the writer
	queued  uint64 // chunks ever queued
	sent    uint64 // chunks ever taken off and handled
	waiters []waiter
	closed  bool
}

type waiter struct {
	until uint64 // done once sent reaches it
	done  chan struct{}
}

func newPipe(c *conn, dir Direction, src, dst net.Conn) *pipe {
	pi := &pipe{c: c, dir: dir, src: src, dst: dst, wake: make(chan struct{}, 1)}
	pi.room = sync.NewCond(&pi.mu)
	return pi
}

func (pi *pipe) read() {
	buf := make([]byte, 32<<10)
	for {
		n, err := pi.src.Read(buf)
		if n > 0 && !pi.straight(buf[:n]) && !pi.enqueue(chunk{data: bytes.Clone(buf[:n]), at: time.Now()}) {
			return
		}
		if err != nil {
			pi.enqueue(chunk{eof: true, at: time.Now()})
			return
		}
	}
}

// straight writes b on at once when nothing is queued or being written
// and the direction has no toxic.
func (pi *pipe) straight(b []byte) bool {
	pi.mu.Lock()
	if len(pi.queue) > 0 || pi.writing || pi.c.p.active[pi.dir].Load() > 0 {
		pi.mu.Unlock()
		return false
	}
	pi.writing = true
	pi.mu.Unlock()
	_, err := pi.dst.Write(b)
	pi.mu.Lock()
	pi.writing = false
	pi.mu.Unlock()
	if err != nil {
		pi.c.close()
	}
	return true
}

// enqueue hands ch to the writer, waiting while holdLimit bytes are
// queued; false once the connection is closed.
func (pi *pipe) enqueue(ch chunk) bool {
	pi.mu.Lock()
	for pi.bytes >= holdLimit && !pi.closed {
		pi.room.Wait()
	}
	if pi.closed {
		pi.mu.Unlock()
		return false
	}
	pi.queue = append(pi.queue, ch)
	pi.bytes += len(ch.data)
	pi.queued++
	pi.mu.Unlock()
	select {
	case pi.wake <- struct{}{}:
	default:
	}
	return true
}

// flushed is closed once every chunk queued so far is handled (written,
// dropped, or the connection closed); nil when none is waiting.
func (pi *pipe) flushed() <-chan struct{} {
	pi.mu.Lock()
	defer pi.mu.Unlock()
	if pi.closed || pi.sent == pi.queued {
		return nil
	}
	w := waiter{until: pi.queued, done: make(chan struct{})}
	pi.waiters = append(pi.waiters, w)
	return w.done
}

func (pi *pipe) write() {
	for {
		ch, ok := pi.next()
		if !ok {
			return
		}
		ok = pi.deliver(ch)
		pi.handled(ch)
		if !ok {
			pi.c.close()
			return
		}
	}
}

// next takes the chunk at the head of the queue, waiting for one.
func (pi *pipe) next() (chunk, bool) {
	for {
		pi.mu.Lock()
		if pi.closed {
			pi.mu.Unlock()
			return chunk{}, false
		}
		if len(pi.queue) > 0 {
			ch := pi.queue[0]
			pi.queue[0] = chunk{}
			pi.queue = pi.queue[1:]
			pi.writing = true
			pi.mu.Unlock()
			return ch, true
		}
		pi.mu.Unlock()
		select {
		case <-pi.wake:
		case <-pi.c.done:
			return chunk{}, false
		}
	}
}

func (pi *pipe) handled(ch chunk) {
	pi.mu.Lock()
	defer pi.mu.Unlock()
	pi.writing = false
	pi.bytes -= len(ch.data)
	pi.sent++
	pi.room.Signal()
	kept := pi.waiters[:0]
	for _, w := range pi.waiters {
		if pi.sent >= w.until {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	pi.waiters = kept
}

// deliver applies the direction's toxics to ch and writes it on; false
// when the connection must close (the sender closed, a write failed, or it
// was closed meanwhile).
func (pi *pipe) deliver(ch chunk) bool {
	var delay time.Duration
	delayed, released := false, false
	for pi.c.p.active[pi.dir].Load() > 0 {
		st := pi.c.p.state(pi.dir)
		if st.drop && !ch.eof {
			return true // lost
		}
		if st.drop || st.hold {
			// Held; a close under a Drop waits for the Drop's
			// removal, which closes the connection anyway.
			select {
			case <-st.changed:
				continue
			case <-pi.c.done:
				return false
			}
		}
		if len(st.slow) == 0 || released || ch.eof {
			break
		}
		if !delayed {
			for _, t := range st.slow {
				delay += jittered(t.Latency, t.Jitter)
			}
			delayed = true
		}
		wait := time.Until(ch.at.Add(delay))
		if wait <= 0 {
			break
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-st.changed:
			timer.Stop()
		case <-pi.c.done:
			timer.Stop()
			return false
		}
		released = true
	}
	if ch.eof {
		return false
	}
	_, err := pi.dst.Write(ch.data)
	return err == nil
}

// jittered is latency ± a uniform jitter.
func jittered(latency, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return latency
	}
	return latency + time.Duration(rand.Int64N(int64(2*jitter)+1)) - jitter
}

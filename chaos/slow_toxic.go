package chaos

import (
	"math/rand/v2"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// slowToxic is the toxiproxy toxic behind slow-replies: toxiproxy's latency
// toxic (each chunk waits latency ± jitter from its arrival), but one that
// never waits for ever on a writer that has gone.
//
// Why not toxiproxy's own latency toxic: it hands a delayed chunk on with a
// plain channel send that does not watch for interrupts. When the client
// resets its connection while replies are delayed (a ZooKeeper client
// giving up on a slow server and reconnecting), the link's writer stops
// reading after its first failed write; the toxic then waits for ever on
// its send, removing the toxic waits for ever for the toxic to stop, with
// the proxy's toxic lock held, and so does the heal and the whole run: a
// full matrix hung on a slow-replies heal until it was killed 11 minutes
// later (TestSlowRepliesHealAfterClientReset reproduces it; toxiproxy
// issues 412 and 558 report the same hang).
//
// This one always watches for the interrupt, keeps the chunk it was
// handing on in the connection's state (StatefulToxic), and at its removal
// (Cleanup) hands on that chunk and those queued behind it under one
// deadline, closing the connection if the writer took nothing for
// holdFlushWait: a stream with a hole in it must not go on.
type slowToxic struct {
	Latency int64 `json:"latency"` // milliseconds, as toxiproxy's latency toxic
	Jitter  int64 `json:"jitter"`  // milliseconds
}

// slowToxicType is the name it is registered under in toxiproxy.
const slowToxicType = "locklab-latency"

// registerSlow makes the toxic known to toxiproxy (see registerHold).
func registerSlow() { toxics.Register(slowToxicType, new(slowToxic)) }

// slowState is one connection's chunk on its way out: delayed, or waiting
// for the writer to take it.
type slowState struct {
	pending *stream.StreamChunk
}

// GetBufferSize lets chunks queue behind the one being delayed, as
// toxiproxy's latency toxic does.
func (*slowToxic) GetBufferSize() int { return 1024 }

// NewState gives each connection its own pending chunk.
func (*slowToxic) NewState() interface{} { return &slowState{} }

func (t *slowToxic) delay() time.Duration {
	d := t.Latency
	if t.Jitter > 0 {
		d += rand.Int64N(2*t.Jitter+1) - t.Jitter
	}
	return time.Duration(d) * time.Millisecond
}

// Pipe delays each chunk, returning at once whenever interrupted (toxiproxy
// interrupts it to add, update or remove toxics on the link). A chunk
// interrupted while delayed goes on without the rest of its delay, as with
// toxiproxy's latency toxic.
func (t *slowToxic) Pipe(stub *toxics.ToxicStub) {
	st, ok := stub.State.(*slowState)
	if !ok {
		st = &slowState{}
		stub.State = st
	}
	for {
		if st.pending != nil {
			select {
			case stub.Output <- st.pending:
				st.pending = nil
			case <-stub.Interrupt:
				return
			}
			continue
		}
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			st.pending = c
			sleep := t.delay() - time.Since(c.Timestamp)
			timer := time.NewTimer(sleep)
			select {
			case <-timer.C:
				c.Timestamp = c.Timestamp.Add(sleep)
			case <-stub.Interrupt:
				timer.Stop()
				return
			}
		}
	}
}

// Cleanup runs when the toxic is removed (the heal), after Pipe returned:
// hand on the pending chunk and the queued ones, then leave the link to
// toxiproxy. A writer that takes nothing for holdFlushWait is gone (its
// far side reset) or stalled: the rest is dropped and the connection
// closed.
func (t *slowToxic) Cleanup(stub *toxics.ToxicStub) {
	st, ok := stub.State.(*slowState)
	if !ok {
		st = &slowState{}
	}
	deadline := time.NewTimer(holdFlushWait)
	defer deadline.Stop()
	for {
		c := st.pending
		if c == nil {
			select {
			case c = <-stub.Input:
				if c == nil { // the sender closed: pass the close on
					stub.Close()
					return
				}
			default:
				return // nothing queued: toxiproxy relinks the stream around us
			}
		}
		select {
		case stub.Output <- c:
			st.pending = nil
		case <-deadline.C:
			st.pending = nil
			stub.Close()
			return
		}
	}
}

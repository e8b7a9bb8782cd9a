package chaos

import (
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// holdToxic is the toxiproxy toxic behind the holding partition: it lets
// nothing through and keeps every byte, and when it is removed it delivers
// them, in order, leaving the connection open.
//
// Why not toxiproxy's own toxics:
//   - timeout drops the bytes, and its removal closes both sides of the
//     connection (the "reset" partition);
//   - latency with a huge delay keeps the bytes, but queued as separate
//     chunks; at removal toxiproxy hands each queued chunk on with a 5 s
//     timeout, so when the far side closed during the partition (a
//     ZooKeeper server expiring the session) every chunk after the first
//     waits out those 5 s while the proxy's toxic lock is held: measured,
//     a heal took 15 s for 5 held pings.
//
// Holding the bytes in the toxic's per-connection state and handing them on
// in few large chunks makes the heal a few sends to a writer that is idle
// and waiting, under one deadline. The state lives on the stub
// (StatefulToxic), so it survives the interrupts toxiproxy sends when
// toxics are added or removed beside it.
type holdToxic struct {
	// FlushWaitMS overrides holdFlushWait (tests); 0 keeps it.
	FlushWaitMS int64 `json:"flush_wait_ms"`

	mu     sync.Mutex
	healed chan struct{} // closed by healedAll once its heal removed it
}

// healedCh is closed once the toxic's heal has removed it from its proxy.
func (t *holdToxic) healedCh() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.healed == nil {
		t.healed = make(chan struct{})
	}
	return t.healed
}

// healedAll tells every connection still holding for this toxic that its
// heal is done. toxiproxy 2.5.0 removes a toxic from a connection by its
// place in the chain, and a removal beside it that closed a stub (a
// dropped reply's timeout toxic, this one's close at a heal) leaves the
// connection's stubs out of step with the chain: the removal then reaches
// another stub, or none, and this one would hold a closed connection for
// ever, a connection the proxy never lets go and a later add trips over
// (addToxic). Told here, it hands on what it held and passes everything
// on, closing as the sender closes.
func (t *holdToxic) healedAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.healed == nil {
		t.healed = make(chan struct{})
	}
	select {
	case <-t.healed:
	default:
		close(t.healed)
	}
}

// holdToxicType is the name it is registered under in toxiproxy.
const holdToxicType = "locklab-hold"

// holdLimit bounds what one connection holds in memory; past it the toxic
// stops reading, so the sender blocks as on a real network once TCP's
// windows are full. Bytes queued behind the limit are handed on at the heal
// by toxiproxy itself, chunk by chunk.
const holdLimit = 64 << 20

// holdChunk is the most handed on in one chunk. toxiproxy's ChanReader
// loses the rest of a chunk more than twice the buffer it is read into
// (io.Copy reads with 32 KiB) when another chunk is already waiting
// (TestChanReaderLosesTailOfBigChunk); holding everything as one chunk
// corrupted a stream of 2000 held commands. 16 KiB stays well below.
const holdChunk = 16 << 10

// holdFlushWait bounds handing on the held bytes at the heal. A writer
// whose far side closed stops reading after its first failed write; only
// then, or when the receiver reads nothing for this long with more than a
// socket buffer pending, is the rest dropped.
const holdFlushWait = 5 * time.Second

type holdState struct {
	data []byte
	eof  bool // the sending side closed after data: close at the heal
}

// registerHold makes the toxic known to toxiproxy. toxiproxy's toxic
// registry is its own package-level map (its toxics register in init); this
// writes the same entry each time, under toxiproxy's lock, so it needs no
// state of ours and no init.
func registerHold() { toxics.Register(holdToxicType, new(holdToxic)) }

// NewState gives each connection its own held bytes.
func (*holdToxic) NewState() interface{} { return &holdState{} }

// Pipe keeps everything that arrives until interrupted, or until its heal
// is done without toxiproxy removing it from this connection (healedAll).
func (t *holdToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*holdState)
	healed := t.healedCh()
	for {
		in := stub.Input
		if st.eof || len(st.data) >= holdLimit {
			in = nil // stop reading: back-pressure (or nothing more will come)
		}
		select {
		case <-stub.Interrupt:
			return
		case <-healed:
			t.passOn(stub)
			return
		case c := <-in:
			if c == nil {
				st.eof = true
				continue
			}
			st.data = append(st.data, c.Data...)
		}
	}
}

// passOn is a healed toxic left on a connection: what was held, then
// everything, as it comes, until the sender closes or toxiproxy interrupts.
func (t *holdToxic) passOn(stub *toxics.ToxicStub) {
	t.Cleanup(stub)
	if stub.Closed() {
		return
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			select {
			case stub.Output <- c:
			case <-stub.Interrupt:
				return
			}
		}
	}
}

// Cleanup runs when the toxic is removed (the heal), after Pipe returned:
// hand on what was held, then the close if the sender had closed.
func (t *holdToxic) Cleanup(stub *toxics.ToxicStub) {
	st := stub.State.(*holdState)
	wait := holdFlushWait
	if t.FlushWaitMS > 0 {
		wait = time.Duration(t.FlushWaitMS) * time.Millisecond
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for len(st.data) > 0 {
		n := min(len(st.data), holdChunk)
		select {
		case stub.Output <- &stream.StreamChunk{Data: st.data[:n], Timestamp: time.Now()}:
			st.data = st.data[n:]
		case <-deadline.C:
			// The writer is gone (its last write failed: the far side
			// closed during the partition) or has not taken a chunk
			// for the flush wait: drop the rest rather than hold the
			// heal, and toxiproxy's lock, for ever.
			st.data = nil
		}
	}
	if st.eof {
		stub.Close()
	}
}

package chaos

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// TestChanReaderLosesTailOfBigChunk pins down the toxiproxy behaviour that
// sets holdChunk: a chunk more than twice the reader's buffer loses its
// tail when another chunk is already waiting (the second read fills the
// buffer from the chunk, then replaces the chunk's rest with the next one). If this starts failing, toxiproxy
// fixed it and holdChunk no longer matters.
func TestChanReaderLosesTailOfBigChunk(t *testing.T) {
	ch := make(chan *stream.StreamChunk, 2)
	big := bytes.Repeat([]byte("a"), 80<<10)
	ch <- &stream.StreamChunk{Data: big}
	ch <- &stream.StreamChunk{Data: []byte("b")}
	close(ch)
	r := stream.NewChanReader(ch)
	var got bytes.Buffer
	buf := make([]byte, 32<<10) // what io.Copy reads with
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
	}
	if got.Len() == len(big)+1 {
		t.Skip("toxiproxy's ChanReader no longer loses data; holdChunk could go")
	}
	if got.Len() >= len(big) {
		t.Fatalf("read %d bytes of %d: a different loss than expected", got.Len(), len(big)+1)
	}
}

// TestHoldToxic: what the toxic holds comes out in order, in chunks no
// larger than holdChunk, followed by the close if the sender closed; and a
// writer that stops taking chunks costs the heal the flush wait at most.
func TestHoldToxic(t *testing.T) {
	data := make([]byte, 100<<10+7)
	for i := range data {
		data[i] = byte(i % 251)
	}
	in := make(chan *stream.StreamChunk)
	out := make(chan *stream.StreamChunk, 64)
	stub := toxics.NewToxicStub(in, out)
	toxic := &holdToxic{}
	stub.State = toxic.NewState()
	piped := make(chan struct{})
	go func() { toxic.Pipe(stub); close(piped) }()
	for off := 0; off < len(data); off += 1000 {
		in <- &stream.StreamChunk{Data: data[off:min(off+1000, len(data))]}
	}
	close(in) // the sender closed
	select {
	case c := <-out:
		t.Fatalf("the toxic let %d bytes through while holding", len(c.Data))
	case <-time.After(20 * time.Millisecond):
	}
	stub.Interrupt <- struct{}{}
	<-piped
	toxic.Cleanup(stub)
	var got []byte
	for c := range out { // closed by Cleanup: the sender's close follows
		if len(c.Data) > holdChunk {
			t.Fatalf("chunk of %d bytes, more than %d", len(c.Data), holdChunk)
		}
		got = append(got, c.Data...)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want the %d held, in order", len(got), len(data))
	}

	// A writer that takes nothing: the heal gives up after the flush wait.
	stuck := toxics.NewToxicStub(nil, make(chan *stream.StreamChunk))
	stuck.State = &holdState{data: data}
	const wait = 50 * time.Millisecond
	start := time.Now()
	(&holdToxic{FlushWaitMS: wait.Milliseconds()}).Cleanup(stuck)
	if took := time.Since(start); took < wait || took > wait+time.Second {
		t.Fatalf("flush to a stuck writer took %v, want about %v", took, wait)
	}
}

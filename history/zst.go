package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// FileName is the history a run writes into its results folder: JSONL
// compressed with zstd as it is written (docs/history.md says why zstd).
const FileName = "history.jsonl.zst"

// zstdMagic opens every zstd frame (RFC 8878).
var zstdMagic = []byte{0x28, 0xB5, 0x2F, 0xFD}

// compressed reports whether a file's path asks Create to compress it.
func compressed(path string) bool { return strings.HasSuffix(path, ".zst") }

// IsZstd reports whether head, a file's first bytes, opens a zstd frame.
func IsZstd(head []byte) bool { return bytes.HasPrefix(head, zstdMagic) }

// Open opens a history file for reading, decompressing it when its first
// bytes say it is zstd (whatever its name), so every reader takes both.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	r, err := decompress(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return readCloser{r, f}, nil
}

type readCloser struct {
	io.Reader
	f *os.File
}

func (rc readCloser) Close() error {
	if c, ok := rc.Reader.(io.Closer); ok {
		c.Close()
	}
	return rc.f.Close()
}

// decompress returns r's bytes, decompressed when they open a zstd frame.
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(zstdMagic))
	if !IsZstd(head) {
		return br, nil
	}
	d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return &cutTail{r: d, d: d}, nil
}

// cutTail passes on a decompressed history a whole line at a time. A
// stream that ends inside a block (a run killed between flushes) reads as
// the lines before the cut, as a JSONL file cut at a line would: the
// writer flushes at line ends, so what was flushed is whole.
type cutTail struct {
	r     io.Reader
	d     *zstd.Decoder
	buf   []byte
	off   int // passed on up to here
	ready int // whole lines up to here
	err   error
}

func (c *cutTail) Read(p []byte) (int, error) {
	for {
		if c.off < c.ready {
			n := copy(p, c.buf[c.off:c.ready])
			c.off += n
			return n, nil
		}
		if c.err != nil {
			return 0, c.err
		}
		c.buf = append(c.buf[:0], c.buf[c.off:]...)
		c.off, c.ready = 0, 0
		if cap(c.buf)-len(c.buf) < 32<<10 {
			c.buf = append(c.buf, make([]byte, 64<<10)...)[:len(c.buf)]
		}
		n, err := c.r.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+n]
		if i := bytes.LastIndexByte(c.buf, '\n'); i >= 0 {
			c.ready = i + 1
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			c.ready, c.err = len(c.buf), io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			c.err = io.EOF // the partial line after the last flush is dropped
		default:
			c.err = fmt.Errorf("zstd: %w", err)
		}
	}
}

// Close releases the decoder's memory.
func (c *cutTail) Close() error {
	c.d.Close()
	return nil
}

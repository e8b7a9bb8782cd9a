package adapter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/impls/memlock"
)

// TestMain lets the test binary be the reference adapter: called as
// `BINARY adapt APPROACH` (testdata/reference.yaml does, through
// $LOCKLAB), it serves a built-in approach as `locklab adapt` does; called
// as `BINARY echo`, it echoes each line (the bare pipe round trip the
// protocol's cost is set beside); as `BINARY answer`, it answers each
// request line with an ok as Serve reads and writes them, with no lock
// behind; as `BINARY adapt-memory`, it serves the
// in-memory lock (the protocol's cost without a server's).
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "echo" {
		echoLines(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if len(os.Args) == 2 && os.Args[1] == "answer" {
		answerLines(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if len(os.Args) == 2 && os.Args[1] == "adapt-memory" {
		if err := Serve(context.Background(), memlock.NewService(1).Approach("memory"), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "adapt-memory:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == "adapt" {
		a, err := all.Registry().Get(os.Args[2])
		if err == nil {
			err = Serve(context.Background(), a, os.Stdin, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "adapt:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echoLines writes each line it reads back at once.
func echoLines(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := append(sc.Bytes(), '\n')
		if _, err := out.Write(line); err != nil {
			return
		}
	}
}

// answerLines reads each request as Serve does and answers it ok, as
// Serve writes: the protocol's parsing and printing without a lock.
func answerLines(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	w := &lineWriter{w: out}
	for sc.Scan() {
		r, err := parseRequest(sc.Bytes())
		if err != nil {
			return
		}
		if err := w.send(reply{Type: TypeOK, ID: r.ID, ValidMs: 9999, Token: 12345, HasToken: true}); err != nil {
			return
		}
	}
}

package adapter

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/impls"
)

// ErrBroken is what every *Error wraps: the adapter broke the protocol, so
// nothing it said can be judged; the run is an infrastructure failure.
var ErrBroken = impls.ErrBrokenClient

// Error is a protocol mistake of one adapter process, told in one line.
type Error struct {
	Approach string
	Client   int
	// Did is what the adapter did: "exited before ready (exit status 1)".
	Did string
	// Stderr is the last lines of its standard error, joined with " | ".
	Stderr string
	// Log is the file its standard error went to; "": none.
	Log string
	// stderr, when set, is read instead of Stderr when the error is told:
	// what the adapter wrote just before its mistake may reach locklab
	// after the mistake was seen (two pipes, read apart).
	stderr *tail
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "adapter %s, client %d: %s", e.Approach, e.Client, oneLine(e.Did))
	if e.stderr != nil {
		e = &Error{Stderr: e.stderr.lines(stderrLines), Log: e.Log}
	}
	if e.Stderr == "" {
		b.WriteString("; its stderr was empty")
	} else {
		fmt.Fprintf(&b, "; its stderr ends: %s", e.Stderr)
	}
	if e.Log != "" {
		fmt.Fprintf(&b, " (all of it in %s)", e.Log)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return ErrBroken }

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

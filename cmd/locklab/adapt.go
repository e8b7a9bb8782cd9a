package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/locklab/locklab/adapter"
	"github.com/locklab/locklab/impls"
)

// cmdAdapt is `locklab adapt APPROACH`: a built-in approach served over
// the lock client protocol (docs/protocol.md) on stdin and stdout, one
// client. It is the protocol's reference adapter: what the protocol costs
// is measured with it, tests use it as an adapter that behaves, and an
// adapter's author can compare theirs with it.
func cmdAdapt(ctx context.Context, reg *impls.Registry, args []string, stderr io.Writer) int {
	const use = "usage: locklab adapt APPROACH: serve a built-in approach over the lock client protocol (docs/protocol.md) on stdin/stdout, one client"
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(stderr, use)
		return exitOK
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, use)
		return exitUsage
	}
	a, err := reg.Get(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "locklab adapt: %v\n", err)
		return exitUsage
	}
	return serveParent("adapt", stderr, func() error { return adapter.Serve(ctx, a, os.Stdin, os.Stdout) })
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/impls"
)

// cmdWorker is `locklab worker`, started by locklab itself: one workload
// client in its own process, talking to its parent over stdin and stdout.
// Not for people: it prints nothing readable.
func cmdWorker(ctx context.Context, reg *impls.Registry, args []string, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "locklab worker: takes no arguments (locklab starts it itself)")
		return exitUsage
	}
	return serveParent("worker", stderr, func() error { return fleet.ServeWorker(ctx, reg, os.Stdin, os.Stdout) })
}

// serveParent runs serve in a process locklab started (a worker, an
// adapter) and maps its error to an exit code. A Ctrl-C is for the
// parent: it stops its children itself, by closing their stdin, so that
// held locks are released first.
func serveParent(name string, stderr io.Writer, serve func() error) int {
	signal.Ignore(os.Interrupt, syscall.SIGHUP)
	if err := serve(); err != nil {
		fmt.Fprintf(stderr, "locklab %s: %v\n", name, err)
		return exitInfra
	}
	return exitOK
}

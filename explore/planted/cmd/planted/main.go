// Command planted serves one planted approach (explore/planted) over the
// lock client protocol (docs/protocol.md) on stdin and stdout: an adapter
// for an approach file kept outside the repository, as the approaches
// `locklab explore` is checked on are. Kept for tests only.
//
//	go build -o /tmp/planted ./explore/planted/cmd/planted
//	command: [/tmp/planted, planted-release-unchecked]    # in the approach file
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/locklab/locklab/adapter"
	"github.com/locklab/locklab/explore/planted"
	"github.com/locklab/locklab/impls"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: planted APPROACH (one of the explore/planted approaches)")
		os.Exit(2)
	}
	reg := impls.NewRegistry()
	planted.Register(reg)
	a, err := reg.Get(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "planted: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := adapter.Serve(ctx, a, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "planted: %v\n", err)
		os.Exit(1)
	}
}

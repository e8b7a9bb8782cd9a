// Command locklab benchmarks distributed locks and checks whether they are
// safe. This file holds flags and sub-commands only; the work is done in the
// packages it calls.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/etcd"
	"github.com/locklab/locklab/impls/mysql"
	"github.com/locklab/locklab/impls/pg"
	"github.com/locklab/locklab/impls/redis"
	"github.com/locklab/locklab/impls/zk"
	"github.com/locklab/locklab/runner"
)

// Exit codes.
const (
	exitOK          = 0
	exitUnsafe      = 1 // a safety verdict contradicts the expectation
	exitUsage       = 2 // bad usage or input
	exitInfra       = 3 // a server could not be started or reached
	exitInterrupted = 130
)

const usage = `locklab: benchmark distributed locks and check whether they are safe

usage:
  locklab bench [flags]            compare lock approaches across client counts
  locklab cluster up [flags]       start the embedded servers, print addresses, wait for Ctrl-C
  locklab list                     the lock approaches and what they promise
  locklab check HISTORY [flags]    verdict for a recorded history (JSONL or Jepsen EDN)
  locklab help [COMMAND]           flags of a command
`

func registry() *impls.Registry {
	r := impls.NewRegistry()
	redis.Register(r)
	mysql.Register(r)
	zk.Register(r)
	etcd.Register(r)
	pg.Register(r)
	return r
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without os.Exit, so tests can drive it.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first Ctrl-C, a second one kills locklab at once (its
		// servers die with it through Pdeathsig).
		<-ctx.Done()
		stop()
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	reg := registry()
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "bench":
		return cmdBench(ctx, reg, rest, stdout, stderr)
	case "cluster":
		return cmdCluster(ctx, reg, rest, stdout, stderr)
	case "list":
		return cmdList(reg, rest, stdout, stderr)
	case "check":
		return cmdCheck(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		if len(rest) > 0 {
			return run([]string{rest[0], "-h"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "locklab: unknown command %q (commands: bench, cluster, list, check, help)\n", cmd)
		return exitUsage
	}
}

// exitCode maps an error to the exit code and prints it as one line.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "locklab: interrupted; what ran so far is kept, marked incomplete")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "locklab: %v\n", err)
	switch {
	case errors.Is(err, runner.ErrUsage):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitInfra
	}
}

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
	"strings"
	"syscall"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/runner"
)

// Exit codes.
const (
	exitOK          = 0
	exitUnsafe      = 1 // a safety verdict contradicts the expectation
	exitUsage       = 2 // bad usage or input
	exitInfra       = 3 // a server could not be started or reached, or did not recover
	exitUndecided   = 4 // the verdict could not be decided: a gate never passes it
	exitInterrupted = 130
)

const usage = `locklab: benchmark distributed locks and check whether they are safe

usage:
  locklab bench [flags]            compare lock approaches across client counts
  locklab run SCENARIO.yaml        run a scenario: approaches under faults, judged against what it expects
  locklab matrix [flags]           every approach against every fault: expected versus observed
  locklab explore --approach A     search generated fault schedules for violations nobody scripted; shrink each
  locklab merge DIR... --out DIR   one results folder, verdict and exit code from the folders of a plan's shards (--shard K/N)
  locklab conform APPROACH         the conformance suite on an approach: does it keep what it declares?
  locklab adapt APPROACH           serve a built-in approach over the lock client protocol (docs/protocol.md)
  locklab cluster up [flags]       start the embedded servers, print addresses, wait for Ctrl-C
  locklab list                     the lock approaches and what they promise
  locklab check HISTORY [flags]    verdict for a recorded history (JSONL or Jepsen EDN)
  locklab compare BASELINE NEW     two bench results side by side; exit 1 when NEW regressed
  locklab help [COMMAND]           flags of a command
`

func main() {
	quietDrivers()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without os.Exit, so tests can drive it.
func run(args []string, stdout, stderr io.Writer) int {
	// SIGHUP (the terminal closed) is a Ctrl-C too: stop in order, keep
	// what ran, remove the servers and temp dirs.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
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
	reg := all.Registry()
	return dispatch(ctx, reg, args, stdout, stderr)
}

// dispatch runs one sub-command.
func dispatch(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
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
	case "compare":
		return cmdCompare(rest, stdout, stderr)
	case "run":
		return cmdRun(ctx, reg, rest, stdout, stderr)
	case "matrix":
		return cmdMatrix(ctx, reg, rest, stdout, stderr)
	case "explore":
		return cmdExplore(ctx, reg, rest, stdout, stderr)
	case "merge":
		return cmdMerge(rest, stdout, stderr)
	case "conform":
		return cmdConform(ctx, reg, rest, stdout, stderr)
	case "worker":
		return cmdWorker(ctx, reg, rest, stderr)
	case "adapt":
		return cmdAdapt(ctx, reg, rest, stderr)
	case "probe":
		return cmdProbe(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		return cmdHelp(ctx, reg, rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "locklab: unknown command %q (commands: bench, run, matrix, explore, merge, conform, adapt, cluster, list, check, compare, help)\n", cmd)
		return exitUsage
	}
}

// helpTopics are the commands `help` knows, with the arguments that
// reach their flags.
var helpTopics = map[string][]string{
	"bench": {"bench"}, "run": {"run"}, "matrix": {"matrix"}, "explore": {"explore"}, "merge": {"merge"}, "conform": {"conform"}, "adapt": {"adapt"}, "check": {"check"}, "compare": {"compare"}, "list": {"list"}, "cluster": {"cluster", "up"},
	"cluster up": {"cluster", "up"},
}

// cmdHelp prints the usage, or one command's flags. It never recurses:
// "help help" and "help -h" are the usage itself.
func cmdHelp(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	topic := strings.Join(args, " ")
	switch topic {
	case "", "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := helpTopics[topic]
	if !ok {
		fmt.Fprintf(stderr, "locklab help: no command %q (commands: bench, run, matrix, explore, merge, conform, adapt, cluster up, list, check, compare)\n", topic)
		return exitUsage
	}
	return dispatch(ctx, reg, append(cmd, "-h"), stdout, stderr)
}

// exitCode maps an error to the exit code and prints it as one line.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, errInterrupted) {
		fmt.Fprintln(stderr, "locklab: interrupted; what ran so far is kept, marked incomplete")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "locklab: %v\n", err)
	if errors.Is(err, runner.ErrUsage) {
		return exitUsage
	}
	return exitInfra
}

// errInterrupted marks an error that happened because of a Ctrl-C (a server
// start cut short), whatever the error says.
var errInterrupted = errors.New("interrupted")

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

func cmdBench(ctx context.Context, reg *impls.Registry, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", stdout)
	backends := listFlag(reg.Names())
	clients := intsFlag{1, 8, 32}
	fs.Var(&backends, "backends", "comma-separated lock approaches (see 'locklab list')")
	fs.Var(&clients, "clients", "comma-separated client counts; each count is one run per backend")
	duration := fs.Duration("duration", 5*time.Second, "how long each run lasts")
	keys := fs.Int("keys", 1, "number of lock keys the clients contend for")
	hold := fs.String("hold", "0", "hold time: 2ms, uniform:1ms-5ms or exp:2ms")
	ttl := fs.Duration("ttl", 10*time.Second, "lease TTL for approaches with expiry")
	acquireTimeout := fs.Duration("acquire-timeout", 10*time.Second, "how long one acquire may wait")
	seed := fs.Uint64("seed", 1, "random seed for key choice and hold times")
	results := fs.String("results", "results", "directory for results/<run-id>/")
	clusterMode := fs.String("cluster", "local", "local: start the servers on 127.0.0.1; external: use --config")
	config := fs.String("config", "", "YAML with server addresses, for --cluster external")
	direct := fs.Bool("direct", false, "connect clients straight to the servers, bypassing the fault-injecting proxies (faster; no chaos possible)")
	workload := fs.String("workload", "mutex", "what holders do: mutex (hold only), counter (read-modify-write a balance in a store), tasks (claim tasks, each once)")
	fenced := fs.Bool("fenced", false, "the store refuses writes with a fencing token older than one it accepted")
	noHistory := fs.Bool("no-history", false, "record and check nothing (to measure what recording costs)")
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locklab bench: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	holdDist, err := scenarios.ParseDist(*hold)
	if err != nil {
		fmt.Fprintf(stderr, "locklab bench: --hold: %v\n", err)
		return exitUsage
	}
	cfg := runner.BenchConfig{
		Backends: backends, Clients: clients, Duration: *duration, Keys: *keys, Hold: holdDist, TTL: *ttl,
		AcquireTimeout: *acquireTimeout, Seed: *seed, ResultsDir: *results, Direct: *direct,
		Workload: *workload, Fenced: *fenced, NoHistory: *noHistory,
	}
	switch *clusterMode {
	case "local":
		if *config != "" {
			fmt.Fprintln(stderr, "locklab bench: --config goes with --cluster external")
			return exitUsage
		}
	case "external":
		if *config == "" {
			fmt.Fprintln(stderr, "locklab bench: --cluster external needs --config FILE")
			return exitUsage
		}
		cfg.External = *config
	default:
		fmt.Fprintf(stderr, "locklab bench: --cluster %q: want local or external\n", *clusterMode)
		return exitUsage
	}
	b := &runner.Bench{Registry: reg, Log: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }}
	if isTerminal(stdout) {
		b.Progress = func(s runner.Status) {
			fmt.Fprintf(stdout, "\r\033[K[%d/%d] %s, %d clients: %4.1fs/%v, %d acquired",
				s.Step, s.Steps, s.Backend, s.Clients, s.Elapsed.Seconds(), s.Duration, s.Acquired)
		}
	}
	out, err := b.Run(ctx, cfg)
	if b.Progress != nil {
		fmt.Fprint(stdout, "\r\033[K")
	}
	if out != nil && len(out.Results.Runs) > 0 {
		report.PrintTable(stdout, out.Results.Runs)
		for _, r := range out.Results.Runs {
			for _, v := range r.Violations {
				fmt.Fprintf(stdout, "%s c%d: %s\n", r.Backend, r.Clients, v)
			}
		}
	}
	if out != nil {
		fmt.Fprintf(stdout, "results: %s\n", out.Dir)
	}
	if err != nil {
		return exitCode(stderr, err)
	}
	return unexpectedViolations(reg, out.Results, stderr)
}

// unexpectedViolations returns exitUnsafe when an approach expected to be
// safe showed a double grant: the CI gate.
func unexpectedViolations(reg *impls.Registry, res *report.Results, stderr io.Writer) int {
	var bad []string
	for _, r := range res.Runs {
		a, err := reg.Get(r.Backend)
		if err == nil && a.Safe && (r.ViolationCount > 0 || r.Linearizable == "no") {
			bad = append(bad, fmt.Sprintf("%s (%d clients): %d violations, linearizable: %s", r.Backend, r.Clients, r.ViolationCount, r.Linearizable))
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "locklab: safety violated by approaches expected to be safe: %s\n", strings.Join(bad, "; "))
		return exitUnsafe
	}
	return exitOK
}

// isTerminal reports whether w is a terminal, for the progress display.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

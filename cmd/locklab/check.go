package main

import (
	"fmt"
	"io"
	"os"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", stdout)
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "locklab check: want one history file")
		return exitUsage
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "locklab check: %v\n", err)
		return exitUsage
	}
	defer f.Close()
	m := checker.NewMutex()
	events := 0
	err = history.ReadJSONL(f, func(ev history.Event) error { m.Add(ev); events++; return nil })
	if err != nil {
		fmt.Fprintf(stderr, "locklab check: %s: %v\n", fs.Arg(0), err)
		return exitUsage
	}
	grants := m.DoubleGrants()
	keys := len(m.Intervals())
	if len(grants) == 0 {
		fmt.Fprintf(stdout, "ok: %d events, %d keys, no double grants\n", events, keys)
		return exitOK
	}
	fmt.Fprintf(stdout, "VIOLATION: %d double grants in %d events over %d keys\n", len(grants), events, keys)
	for _, g := range grants {
		fmt.Fprintf(stdout, "  %s\n", g.Describe(m.Origin()))
	}
	return exitUnsafe
}

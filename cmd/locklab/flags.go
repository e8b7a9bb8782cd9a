package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// newFlags returns a flag set that reports errors as one line (the caller
// prints it) and prints its help only when asked.
func newFlags(name string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("locklab "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage on every parse error; help is printed
	// only when asked for, by parseFlags.
	fs.Usage = func() {}
	return fs
}

func printHelp(fs *flag.FlagSet, stdout io.Writer) {
	fmt.Fprintf(stdout, "usage: %s [flags]\n", fs.Name())
	fs.SetOutput(stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseFlags parses args; it returns the exit code to use, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return -1
	case errors.Is(err, flag.ErrHelp):
		printHelp(fs, stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "%s: %v (see 'locklab help %s')\n", fs.Name(), err, strings.TrimPrefix(fs.Name(), "locklab "))
		return exitUsage
	}
}

// listFlag is a comma-separated list of strings.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	if len(*l) == 0 {
		return errors.New("empty list")
	}
	return nil
}

// intsFlag is a comma-separated list of positive integers.
type intsFlag []int

func (l *intsFlag) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intsFlag) Set(s string) error {
	*l = nil
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			return fmt.Errorf("%q is not a positive integer", p)
		}
		*l = append(*l, v)
	}
	return nil
}

// clusterFlags checks --cluster and --config together; it returns the
// external config path ("" for local) or an exit code >= 0 on bad usage.
func clusterFlags(cmd, mode, config string, stderr io.Writer) (string, int) {
	switch mode {
	case "local":
		if config != "" {
			fmt.Fprintf(stderr, "locklab %s: --config goes with --cluster external\n", cmd)
			return "", exitUsage
		}
		return "", -1
	case "external":
		if config == "" {
			fmt.Fprintf(stderr, "locklab %s: --cluster external needs --config FILE\n", cmd)
			return "", exitUsage
		}
		return config, -1
	}
	fmt.Fprintf(stderr, "locklab %s: --cluster %q: want local or external\n", cmd, mode)
	return "", exitUsage
}

// errWriter remembers the first write error, so a command can say its
// output was lost (a full disk, a closed pipe) instead of exiting 0.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	e.err = err
	return n, err
}

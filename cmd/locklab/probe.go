package main

import (
	"context"
	"fmt"
	"io"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/stall"
)

// cmdProbe is `locklab probe`, which locklab runs in a container beside
// the servers (--cluster docker): the stall monitor's probe, printing each
// stall as a JSON line ({"start":ns,"end":ns}, CLOCK_MONOTONIC) until it
// is stopped. Not for people.
func cmdProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("probe", stdout)
	period := fs.Duration("period", stall.DefaultPeriod, "how often the probe wakes")
	threshold := fs.Duration("threshold", stall.DefaultThreshold, "how late a wake-up must be to be a stall")
	if code := parseFlags(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if *period <= 0 || *threshold <= 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "locklab probe: want a positive --period and --threshold, and no argument (locklab starts it itself)")
		return exitUsage
	}
	mono := clock.NewMonotonic()
	if err := stall.Serve(ctx, stall.Probe{Period: *period, Threshold: *threshold}, mono.Nanos, stdout); err != nil {
		fmt.Fprintf(stderr, "locklab probe: %v\n", err)
		return exitInfra
	}
	return exitOK
}

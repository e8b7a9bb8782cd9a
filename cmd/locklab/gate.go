package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/locklab/locklab/compare"
	"github.com/locklab/locklab/report"
)

// gate is what a gating command does once its cases ran: compare them
// with a baseline (bench) and write JUnit XML for CI systems.
type gate struct {
	kind     string
	baseline *string
	bound    *string
	junit    *string
	// parsed by load
	base  *report.Results
	limit float64
	// need: with repeated runs, how many runs of each approach must agree
	// (0: all of them).
	need int
	// shard is --shard: run one shard of the cases, the gate left to
	// locklab merge.
	shard shardFlag
}

// gateFlags adds --junit, and --baseline and --max-regression when the
// command can compare.
func gateFlags(fs *flag.FlagSet, kind string, baseline bool) *gate {
	g := &gate{kind: kind, baseline: new(string), bound: new(string)}
	g.junit = fs.String("junit", "", "also write JUnit XML to this file: one test case per case, a contradicted expectation or a regression as a failure")
	g.shard = addShardFlag(fs, map[string]string{"bench": "the cases (approaches x client counts)", "run": "the runs (approaches x --runs)"}[kind])
	if baseline {
		g.baseline = fs.String("baseline", "", "results.json (or its folder) of an earlier bench: exit 1 when a case regressed beyond --max-regression or shows a new safety violation")
		g.bound = fs.String("max-regression", "15%", "with --baseline: how much throughput may fall, or acquire/hand-off p99 rise, before it is a regression")
	}
	return g
}

// load reads the baseline before anything runs: a bad one is a usage
// error, not a finding after minutes of benchmarking.
func (g *gate) load(stderr io.Writer) int {
	var err error
	if g.limit, err = compare.ParseBound(*g.bound); *g.bound != "" && err != nil {
		fmt.Fprintf(stderr, "locklab %s: --max-regression %v\n", g.kind, err)
		return exitUsage
	}
	if *g.baseline == "" {
		return -1
	}
	if g.base, err = report.ReadResults(*g.baseline); err != nil {
		fmt.Fprintf(stderr, "locklab %s: --baseline: %v\n", g.kind, err)
		return exitUsage
	}
	return -1
}

// finish compares and writes the JUnit file; it returns the exit code
// given the one the cases called for.
func (g *gate) finish(res *report.Results, code int, stdout, stderr io.Writer) int {
	if res == nil {
		return code
	}
	var regressions map[string][]string
	if g.base != nil {
		cmp := compare.Compare(g.base, res, g.limit)
		fmt.Fprintf(stdout, "\ncompared with the baseline %s (%s):\n", *g.baseline, g.base.RunID)
		if err := compare.Print(stdout, cmp); err != nil {
			fmt.Fprintf(stderr, "locklab %s: %v\n", g.kind, err)
		}
		if len(cmp.Rows) == 0 {
			fmt.Fprintf(stderr, "locklab %s: no case in common with the baseline: nothing compared\n", g.kind)
			code = max(code, exitUsage)
		}
		regressions = cmp.ByCase()
		if cmp.Regressed() && code == exitOK {
			code = exitUnsafe
		}
	}
	if *g.junit != "" {
		b, err := report.RunsJUnit(g.kind, res.Runs, regressions)
		if err == nil {
			err = report.WriteFileAtomic(*g.junit, b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "locklab %s: %v\n", g.kind, err)
			if code == exitOK {
				code = exitInfra
			}
		}
	}
	return code
}

// unstarted writes the JUnit file of a run whose servers never came up: no
// case ran, and one error case says why, so a CI system shows the reason
// where it looks for the results instead of an empty or missing report.
func (g *gate) unstarted(runErr error, code int, stderr io.Writer) int {
	if *g.junit == "" {
		return code
	}
	j := report.NewJUnit("locklab " + g.kind)
	j.Error("locklab."+g.kind, "servers", 0, "no case ran: "+runErr.Error())
	b, err := j.XML()
	if err == nil {
		err = report.WriteFileAtomic(*g.junit, b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "locklab %s: %v\n", g.kind, err)
	}
	return code
}

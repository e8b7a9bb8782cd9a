package conformance

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// Options are what `locklab conform` runs: the suite on each approach,
// against real servers of its kind.
type Options struct {
	Approaches []impls.Approach
	// Match runs only the suite tests whose name (APPROACH/TestName)
	// matches this regular expression; "" runs them all.
	Match string
}

// Lookup finds the approaches of a comma-separated list of names.
func Lookup(reg *impls.Registry, names string) ([]impls.Approach, error) {
	var out []impls.Approach
	for _, name := range strings.Split(names, ",") {
		a, err := reg.Get(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Validate says whether there is an approach to test and Match compiles.
func (o Options) Validate() error {
	if len(o.Approaches) == 0 {
		return errors.New("no approach to test")
	}
	if _, err := regexp.Compile(o.Match); err != nil {
		return fmt.Errorf("--run: %w", err)
	}
	return nil
}

// Servers are the kinds the approaches need, each once, in order.
func (o Options) Servers() []impls.Server {
	var out []impls.Server
	for _, a := range o.Approaches {
		if !slices.Contains(out, a.Server) {
			out = append(out, a.Server)
		}
	}
	return out
}

// Progress hears of a run as it goes; any field may be nil.
type Progress struct {
	Begin  func(impls.Approach)                          // before an approach's tests
	Result func(Result)                                  // each test as it ends
	End    func(impls.Approach, []Result, time.Duration) // after an approach's tests
}

// HarnessError is an approach that could not be tested at all: the
// cluster has no servers for it.
type HarnessError struct{ Err error }

func (e *HarnessError) Error() string { return e.Err.Error() }
func (e *HarnessError) Unwrap() error { return e.Err }

// Run runs the suite on each approach in turn against c's servers. It
// stops at an approach that cannot be tested (a *HarnessError) or whose
// run was cut short, returning the results so far.
func (o Options) Run(ctx context.Context, c *cluster.Cluster, p Progress) ([]Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var filter func(string) bool
	if o.Match != "" {
		filter = regexp.MustCompile(o.Match).MatchString
	}
	var all []Result
	for _, a := range o.Approaches {
		h, err := HarnessFor(c, a)
		if err != nil {
			return all, &HarnessError{err}
		}
		if p.Begin != nil {
			p.Begin(a)
		}
		s := &Standalone{Match: filter, Report: p.Result}
		start := time.Now()
		rs, err := s.Run(ctx, a.Name, func(t T) { RunT(t, h) })
		all = append(all, rs...)
		if err != nil {
			return all, err
		}
		if p.End != nil {
			p.End(a, rs, time.Since(start))
		}
	}
	return all, nil
}

// SuiteTests are the results that stand for a test of the suite: those
// under an approach without subtests, and a test that failed by itself
// (the approach's harness, say), so no failure goes unreported. An
// approach whose tests Match filtered out is none.
func SuiteTests(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.IsSuiteTest() {
			out = append(out, r)
		}
	}
	return out
}

// IsSuiteTest says whether r stands for a test of the suite (SuiteTests).
func (r Result) IsSuiteTest() bool {
	return r.OwnFailure || r.Subtests == 0 && strings.Contains(r.Name, "/")
}

// Failures are the names of the suite tests that failed.
func Failures(rs []Result) []string {
	var out []string
	for _, r := range SuiteTests(rs) {
		if r.Status == Failed {
			out = append(out, r.Name)
		}
	}
	return out
}

// Count is "12 passed, 1 failed, 9 skipped" over the suite tests.
func Count(rs []Result) string {
	n := map[Status]int{}
	for _, r := range SuiteTests(rs) {
		n[r.Status]++
	}
	return fmt.Sprintf("%d passed, %d failed, %d skipped", n[Passed], n[Failed], n[Skipped])
}

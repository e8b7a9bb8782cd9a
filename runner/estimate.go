package runner

import (
	"slices"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/matrix"
)

// Planning a run's time: about how long a plan takes (Estimate), and the
// matrix's runs per cell fitted to a budget (FitMatrix). Nothing here runs
// a case.

// CaseOverhead is what a case costs beyond the time it runs (its clients
// start and stop, the servers' health is checked, the history is judged,
// plots drawn), as measured on a 2-core machine: the estimate printed at
// the start of a matrix adds it to every case, and ClusterStart to every
// start of the servers.
const CaseOverhead = 1500 * time.Millisecond

// ClusterStart is what a start of the servers a group of cases asks for
// costs: its slowest kind's (cluster.StartCost).
func ClusterStart(docker bool) func([]Case) time.Duration {
	return func(group []Case) time.Duration {
		ss := make([]impls.Server, len(group))
		for i, c := range group {
			ss[i] = c.Approach.Server
		}
		return cluster.StartCost(docker, ss...)
	}
}

// Estimate is about how long p takes to run, allowing perCase on top of
// each case's expected length (expectedLength) and perCluster(group) for
// each start of the servers a group of cases asks for: one case after the
// other, their sum; in parallel, each group of cases asking for the same
// server options played through the scheduler the run uses (at most
// maxCases at once), groups one after the other.
func Estimate(p Plan, parallel bool, maxCases int, perCase time.Duration, perCluster func(group []Case) time.Duration) time.Duration {
	cost := func(c Case) time.Duration { return expectedLength(c, p.EndWhenAnswered) + perCase }
	groups := groupsByServers(p.Cases)
	var total time.Duration
	for _, g := range groups {
		total += perCluster(g)
	}
	if !parallel {
		for _, c := range p.Cases {
			total += cost(c)
		}
		return total
	}
	if maxCases <= 0 {
		maxCases = DefaultMaxCases()
	}
	ls := p.layouts(parallel, maxCases)
	for _, group := range groups {
		total += simulate(group, p.ShareServers, ls, maxCases, cost)
	}
	return total
}

// simulate plays a group of cases through the scheduler, each taking
// cost, and returns when the last would end.
func simulate(cases []Case, share bool, ls layouts, maxCases int, cost func(Case) time.Duration) time.Duration {
	s := newScheduler(cases, share, ls)
	type running struct {
		i, lane int
		end     time.Duration
	}
	var now time.Duration
	var busy []running
	waiting := caseOrder(cases, cost)
	for len(waiting) > 0 || len(busy) > 0 {
		waiting = s.pass(waiting, maxCases-len(busy), func(i, li int) {
			busy = append(busy, running{i: i, lane: li, end: now + cost(cases[i])})
		})
		if len(busy) == 0 {
			break // nothing can start: cannot happen, every case has a lane
		}
		k := 0
		for j := range busy {
			if busy[j].end < busy[k].end {
				k = j
			}
		}
		now = busy[k].end
		s.leave(busy[k].i, busy[k].lane)
		busy = slices.Delete(busy, k, k+1)
	}
	return now
}

// expectedLength is about how long c runs: its duration, or, when it ends
// once answered (answer.go), until its faults' first round has run its
// course, plus what the rule watches after it and the tail.
func expectedLength(c Case, early bool) time.Duration {
	d := c.Workload.Duration
	if !early && !c.EndWhenAnswered {
		return d
	}
	plan, err := compileFaults(c)
	if err != nil {
		return d
	}
	rule, ok := newAnswerRule(c, plan)
	if !ok || len(plan) == 0 {
		return d
	}
	var round time.Duration
	first := plan[0].At
	seen := map[int]bool{}
	for _, p := range plan {
		first = min(first, p.At)
		if !seen[p.Step] {
			seen[p.Step] = true
			round = max(round, p.At+p.For)
		}
	}
	end := round + answerTail
	if !rule.unsafe {
		// A lease from the first fault, and grants after the round: the
		// holds of the clients but one (the last was going on).
		end = max(end, first+rule.lease+answerTail) + time.Duration(rule.clients-1)*max(c.Workload.Hold.A, c.Workload.Hold.B)
	}
	return min(d, end)
}

// MatrixFit is a matrix plan fitted to a time budget.
type MatrixFit struct {
	Plan  Plan
	Cells []matrix.Cell
	// Runs is the runs per cell planned: those asked for, or fewer when
	// they would not fit the budget.
	Runs     int
	Estimate time.Duration // about how long Plan takes
	// AskedEstimate is about how long the runs asked for would take.
	AskedEstimate time.Duration
	// PastBudget: a shard's share would run past the budget, which stops
	// it (MatrixRunOptions.Fit).
	PastBudget bool
}

// FitMatrix plans the part of the matrix opt chooses (MatrixPlan) and,
// when estimate puts it past budget (0: no limit), fewer runs per cell,
// down to one, until it fits: every cell's first runs first, so a budget
// that still runs out leaves every cell its first runs.
func FitMatrix(reg *impls.Registry, m *matrix.Matrix, opt MatrixOptions, budget time.Duration, estimate func(Plan) time.Duration) (MatrixFit, error) {
	plan := func(runs int) (Plan, []matrix.Cell, error) {
		o := opt
		o.Runs = runs
		return MatrixPlan(reg, m, o)
	}
	p, cells, err := plan(opt.Runs)
	if err != nil {
		return MatrixFit{}, err
	}
	fit := MatrixFit{Plan: p, Cells: cells, Runs: opt.Runs, Estimate: estimate(p)}
	fit.AskedEstimate = fit.Estimate
	runs := FitRuns(opt.Runs, budget, func(runs int) time.Duration {
		if runs == opt.Runs {
			return fit.AskedEstimate
		}
		p, _, err := plan(runs)
		if err != nil {
			return 0 // planned again below, where the error is returned
		}
		return estimate(p)
	})
	if runs == opt.Runs {
		return fit, nil
	}
	if fit.Plan, fit.Cells, err = plan(runs); err != nil {
		return MatrixFit{}, err
	}
	fit.Runs, fit.Estimate = runs, estimate(fit.Plan)
	return fit, nil
}

// FitRuns is how many runs per cell, of the asked, fit budget: the most
// that estimate puts within it, or one when none does; budget 0 (no
// limit): asked. It asks estimate from asked down.
func FitRuns(asked int, budget time.Duration, estimate func(runs int) time.Duration) int {
	runs := asked
	for budget > 0 && runs > 1 && estimate(runs) > budget {
		runs--
	}
	return runs
}

package explore

import (
	"context"
	"fmt"
	"github.com/locklab/locklab/runner"
	"slices"
	"strings"
	"time"
)

// The exploring runs go in batches: as many side by side as Parallel
// allows, on one set of servers, while the budget lasts.

// nextBatch draws the next batch of exploring runs, approaches taking
// turns (one whose case no longer fits the budget gives its turn away).
// A batch runs on one set of servers: a schedule that asks for servers run
// otherwise than those running now (under libfaketime, for a server clock
// jump) waits with others like it until they fill a batch of their own, so
// the servers are started anew once for a batch, not for every such case
// (a ZooKeeper ensemble's restart cost a search of zk-ephemeral a third of
// its budget).
func (e *explorer) nextBatch(next *int) ([]exploring, error) {
	cur, running := e.running()
	if len(e.deferred) >= e.cfg.Parallel || (!running && len(e.deferred) > 0) {
		return e.takeDeferred(), nil
	}
	var batch []exploring
	for len(batch) < e.cfg.Parallel && len(e.deferred) < e.cfg.Parallel {
		placed := false
		for range e.res.Approaches {
			srch := e.res.Approaches[*next%len(e.res.Approaches)]
			*next++
			s, origin := srch.searcher.Next()
			if !e.afford(srch, s) {
				continue
			}
			c, err := e.cs.caseOf(s, "next")
			if err != nil {
				return nil, err
			}
			x := exploring{srch: srch, s: s, origin: origin}
			if o := c.ServerOptions(); running && o != cur {
				e.deferred = append(e.deferred, x)
			} else {
				batch = append(batch, x)
				cur, running = o, true
			}
			placed = true
			break
		}
		if !placed {
			break
		}
	}
	if len(batch) == 0 {
		// Every run drawn waits for other servers, or none fits any more.
		return e.takeDeferred(), nil
	}
	return batch, nil
}

// takeDeferred is a batch of the deferred runs that still fit the budget.
func (e *explorer) takeDeferred() []exploring {
	n := min(len(e.deferred), e.cfg.Parallel)
	batch := slices.DeleteFunc(slices.Clone(e.deferred[:n]), func(x exploring) bool { return !e.afford(x.srch, x.s) })
	e.deferred = slices.Delete(e.deferred, 0, n)
	return batch
}

// exploring is one exploring run of a batch.
type exploring struct {
	srch   *Search
	s      Schedule
	origin Origin
	n      int    // its number among the exploring runs
	name   string // its case's
}

// afford reports whether one more run of s fits in the budget.
func (e *explorer) afford(srch *Search, s Schedule) bool {
	return time.Now().Add(cost(s) + srch.overhead).Before(e.deadline)
}

// cost is what a run of s takes at least: its duration, and the last hold,
// which a holder finishes after the run's end.
func cost(s Schedule) time.Duration { return s.Duration + max(s.Workload.Hold.A, s.Workload.Hold.B) }

// explore runs a batch of exploring cases side by side and looks at
// what each showed, in order.
func (e *explorer) explore(ctx context.Context, batch []exploring) error {
	e.begin(batchDoing(batch, &e.res.Runs))
	ss, names, charged := make([]Schedule, len(batch)), make([]string, len(batch)), make([]*Search, len(batch))
	for i, x := range batch {
		ss[i], names[i], charged[i] = x.s, x.name, x.srch
	}
	res, err := e.runCases(ctx, ss, names, nil, charged)
	if err != nil {
		return err
	}
	for i, x := range batch {
		if res[i].Run.Case == "" {
			// Never started: the budget or a Ctrl-C ended the batch.
			e.res.Runs--
			x.srch.Runs--
			continue
		}
		if err := e.examine(x.srch, x.s, x.n, x.name, res[i]); err != nil {
			return err
		}
	}
	return nil
}

// batchDoing numbers batch's runs from *runs on and says what they are.
func batchDoing(batch []exploring, runs *int) string {
	var whats []string
	for i := range batch {
		x := &batch[i]
		*runs++
		x.srch.Runs++
		x.n = *runs
		x.name = fmt.Sprintf("e%04d", x.n)
		how := fmt.Sprintf("fresh #%d", x.origin.Fresh)
		if x.origin.Fresh < 0 {
			how = fmt.Sprintf("mutant #%d", x.origin.Mutant)
		}
		whats = append(whats, fmt.Sprintf("%s %s (%s): %s", x.name, x.srch.Approach, how, x.s.Summary()))
	}
	if len(whats) > 1 {
		return fmt.Sprintf("%s..%s side by side; %s", batch[0].name, batch[len(batch)-1].name, strings.Join(whats, "; "))
	}
	return whats[0]
}

// runCases runs schedules ss side by side as cases named names (each
// first passed to adjust, when set): exploring runs and a shrink's runs
// alike. What the batch took beyond its longest schedule is what a case
// costs beyond its own: each of charged, in order, averages it in.
func (e *explorer) runCases(ctx context.Context, ss []Schedule, names []string, adjust func(c *runner.Case), charged []*Search) ([]runner.CaseResult, error) {
	cases := make([]runner.Case, len(ss))
	for i, s := range ss {
		c, err := e.cs.caseOf(s, names[i])
		if err != nil {
			return nil, err
		}
		if adjust != nil {
			adjust(&c)
		}
		cases[i] = c
	}
	t0 := time.Now()
	res, err := e.sess.RunCases(ctx, cases)
	if err == nil && ctx.Err() == nil {
		took := max(time.Since(t0)-cost(longest(ss)), 0)
		for _, srch := range charged {
			srch.overhead = (srch.overhead + took) / 2
		}
	}
	return res, err
}

// longest is the schedule of ss that runs longest: a batch's time.
func longest(ss []Schedule) Schedule {
	l := ss[0]
	for _, s := range ss[1:] {
		if cost(s) > cost(l) {
			l = s
		}
	}
	return l
}

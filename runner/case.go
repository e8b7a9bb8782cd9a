package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/HdrHistogram/hdrhistogram-go"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/metrics"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// caseEnv is what every case of a plan shares.
type caseEnv struct {
	cluster  Cluster // nil when no approach of the plan needs a server
	history  history.Recorder
	mono     *clock.Monotonic
	dir      string
	nonce    string // keeps keys of different runs on one server apart
	procBase int    // process ids already used by earlier cases
	step     int
	steps    int
	progress func(Status)
	logf     func(string, ...any)
	// workerArgv starts one worker process; nil: this binary's "worker".
	workerArgv []string
	// servers is the cluster itself when locklab started or connected to
	// one (nil without servers): per-client proxies and target nodes.
	servers *cluster.Cluster
	// healthTimeout bounds each health check (Runner.HealthTimeout).
	healthTimeout time.Duration
	// redis are the Redis nodes (indices among the cluster's) this
	// environment's cases use, when lanes side by side share them out;
	// nil: all of them.
	redis []int
}

// nodesOf is the nodes of kind b that this environment's cases use.
func (e *caseEnv) nodesOf(b impls.Server) []*cluster.Node {
	ns := e.servers.NodesOf(b)
	if b != impls.Redis || e.redis == nil {
		return ns
	}
	return pick(ns, e.redis)
}

// pick is the elements of all at the indices idx (those in range).
func pick[T any](all []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		if i < len(all) {
			out = append(out, all[i])
		}
	}
	return out
}

// healthy checks the servers of kind b before and after a case: those
// of its own lane only. Another kind's servers, or another lane's Redis
// nodes, are not this case's business: a fault there (a failover lane's
// primary down for half a minute) would only hold it up, or fail it.
func (e *caseEnv) healthy(ctx context.Context, b impls.Server) error {
	if e.servers == nil {
		return e.cluster.Healthy(ctx, e.healthTimeout)
	}
	return cluster.NodesHealthy(ctx, e.healthTimeout, e.nodesOf(b))
}

// narrow keeps the Redis addresses this environment's cases use.
func (e *caseEnv) narrow(ep impls.Endpoints) impls.Endpoints {
	if e.redis != nil {
		ep.Redis = pick(ep.Redis, e.redis)
	}
	return ep
}

// useServers points the environment at servers (nil: none). The nil check
// keeps a nil *cluster.Cluster from becoming a non-nil Cluster interface.
func (e *caseEnv) useServers(servers *cluster.Cluster) {
	e.cluster, e.servers = nil, servers
	if servers != nil {
		e.cluster = servers
	}
}

// caseOutcome is what one case produced.
type caseOutcome struct {
	run     report.Run
	stats   workload.Stats
	verdict verdict.Result
	handOff *hdrhistogram.Histogram
}

// defaultHealthTimeout bounds how long a case waits for its servers to be
// healthy, before it starts and after its faults are healed.
const defaultHealthTimeout = 30 * time.Second

// runCase runs one case. It proceeds like so:
//  1. the servers the case uses are healthy (else an infrastructure error);
//  2. the fleet starts: one lock client per workload client, goroutines or
//     worker processes, each through its own proxies when a fault may cut
//     one client's links;
//  3. the workload and the chaos engine run together, both recording into
//     the run's history; every event also feeds the case's checker and the
//     live view of who holds what (for "the holder of k" targets);
//  4. at the end of the duration: every fault still injected is healed,
//     and the servers must be healthy again (else an infrastructure error:
//     a cluster that did not recover says so);
//  5. the fleet closes (held locks were released by the workload; a
//     crashed or retired client's lock is left to the server);
//  6. the checker decides: the same code as `locklab check`;
//  7. the verdict: what the case showed against what it was expected to;
//  8. the case's artifacts: its timeline with the fault windows.
func runCase(ctx context.Context, env *caseEnv, c Case) (caseOutcome, error) {
	a := c.Approach
	n := c.Workload.Clients
	plan, err := compileFaults(c)
	if err != nil {
		return caseOutcome{}, usageErr(err)
	}
	// 1. Health.
	if env.cluster != nil {
		if err := env.healthy(ctx, c.Approach.Server); err != nil {
			return caseOutcome{}, infraErr(fmt.Errorf("%s: before the case: %w", c.Name, err))
		}
	}
	// 2. The fleet.
	ownLinks := false
	for _, st := range c.Faults {
		ownLinks = ownLinks || st.Target.Kind() == chaos.TargetLink
	}
	endpoints := func(slot int) (impls.Endpoints, error) {
		switch {
		case env.servers == nil:
			return impls.Endpoints{}, nil
		case c.Direct:
			return env.narrow(env.servers.DirectEndpoints()), nil
		case ownLinks:
			ep, err := env.servers.ClientEndpoints(slot)
			return env.narrow(ep), err
		}
		return env.narrow(env.servers.Endpoints()), nil
	}
	hold := newHolders()
	rec := &checkingRecorder{w: history.Discard{}, observe: hold.see, locks: metrics.NewLocks()}
	if c.Record {
		rec.w = env.history
		rec.check = checker.New(true)
	}
	prog := &workload.Progress{}
	spec := c.Workload
	spec.KeyPrefix = fmt.Sprintf("%s/%s/", env.nonce, c.Name)
	spec.ProcBase = env.procBase
	spec.Store = workload.NewStore(rec, env.mono, spec.Fenced, 1_000_000)
	if err := spec.Validate(); err != nil {
		return caseOutcome{}, usageErr(err)
	}
	clients, err := fleet.New(ctx, fleet.Config{Approach: a, Workload: spec, Processes: c.Processes, Endpoints: endpoints,
		Bind: hold.bind, Recorder: rec, Mono: env.mono, Progress: prog, WorkerArgv: env.workerArgv, Dir: env.dir})
	if err != nil {
		return caseOutcome{}, infraErr(err)
	}
	defer clients.Close()

	// 3. Workload and chaos, recorded.
	nem := &nemesisRecorder{rec: rec, clk: env.mono, idBase: int64(env.procBase) * 1000}
	var engine *chaos.Engine
	var engineErr error
	engineDone := make(chan struct{})
	if len(plan) > 0 {
		res := &resolver{cl: env.servers, nodesOf: env.nodesOf, server: a.Server, keyPrefix: spec.KeyPrefix, slots: clients.Slots(), holders: hold, ownLinks: ownLinks}
		engine = chaos.NewEngine(res, nem, holdingWaiter{holders: hold, key: res.keyName})
	}
	stopProgress := env.reportProgress(c, prog)
	start := time.Now()
	go func() {
		defer close(engineDone)
		if engine == nil {
			return
		}
		// Faults act during the duration; at its end (or on Ctrl-C) every
		// one still in place is healed while the clients drain.
		ectx, cancel := context.WithDeadline(ctx, start.Add(spec.Duration))
		defer cancel()
		runErr := engine.Run(ectx, start, plan)
		// Run returns once every planned injection has fired; faults
		// without a `for` stay until the end of the duration.
		<-ectx.Done()
		engineErr = errors.Join(runErr, engine.HealAll(ctx))
	}()
	// The clients start once the faults due at the start are in place: a
	// partition "from 0 s" is there before the first request.
	if engine != nil {
		select {
		case <-engine.Opened():
		case <-ctx.Done():
		}
	}
	stats, err := clients.Run(ctx)
	<-engineDone
	stopProgress()
	if err != nil {
		return caseOutcome{}, infraErr(err)
	}
	env.procBase += stats.Procs

	// 4. Health again: a case whose servers did not recover says so.
	if env.cluster != nil && ctx.Err() == nil {
		if err := env.healthy(ctx, c.Approach.Server); err != nil {
			return caseOutcome{}, infraErr(fmt.Errorf("%s: servers did not recover after the faults: %w", c.Name, err))
		}
	}
	if engineErr != nil {
		env.logf("warning: %s: faults: %v", c.Name, engineErr)
	}
	// 5. The fleet closes (deferred above).

	run := report.Run{
		Case: c.Name, Approach: a.Name, Clients: n, Seconds: stats.Elapsed.Seconds(), Acquired: stats.Acquired,
		AcquiresPerSec: float64(stats.Acquired) / stats.Elapsed.Seconds(),
		NotAcquired:    stats.NotAcquired, Indeterminate: stats.Indeterminate, Errors: stats.Errors,
		FirstError: stats.FirstError, ReleaseNotHeld: stats.ReleaseNotHeld, Renewals: stats.Renewals,
		Lost: stats.Lost, Replaced: stats.Replaced, Crashed: stats.Crashed, Late: stats.Late,
		Acquire: report.Summarise(stats.Acquire), Release: report.Summarise(stats.Release),
		Complete: ctx.Err() == nil, Linearizable: checker.LinNotChecked, ViaProxy: !c.Direct && env.servers != nil,
		HandOff: report.Summarise(rec.lockMetrics().HandOff()), Fairness: rec.lockMetrics().Fairness(),
	}
	co := caseOutcome{run: run, stats: stats, handOff: rec.lockMetrics().HandOff()}
	first, last := rec.span()
	windows, faults := nem.windows(first, last)
	co.run.Faults = faults
	// 6. Check. The verdict is computed even after Ctrl-C: what ran is
	// still judged.
	var v checker.Verdict
	if rec.check != nil {
		v, err = rec.check.Verdict(context.WithoutCancel(ctx), checker.Options{
			TimeLimit: 10 * time.Second, HTMLDir: filepath.Join(env.dir, "linearizability")})
		if err != nil {
			return co, infraErr(fmt.Errorf("%s: check: %w", c.Name, err))
		}
		co.run.AddVerdict(v, env.dir, report.Limits{Violations: 10})
	}
	// 7. Expected versus observed. "Blocked": after the last fault took
	// effect, clients kept asking and nobody was granted the lock again.
	live := verdict.Liveness{Unavailable: stats.Unavailable, NothingGranted: stats.Acquired == 0}
	if nem.last != 0 && !rec.grantedSince(nem.last) && (stats.NotAcquired > 0 || stats.Errors > 0) {
		live.Blocked = true
	}
	obs := verdict.Observe(v, rec.check != nil, live)
	co.verdict = verdict.Compare(c.Expect, obs)
	if ctx.Err() != nil {
		co.verdict = cutShort(co.verdict)
	}
	co.run.Expected = c.Expect.Names()
	co.run.Observed = outcomeNames(co.verdict.Observed)
	co.run.Missing = outcomeNames(co.verdict.Missing)
	co.run.FirstViolationAt = -1
	if len(v.DoubleGrants) > 0 {
		from := first
		if nem.first != 0 {
			from = nem.first
		}
		at := v.DoubleGrants[0].Second.Start
		for _, d := range v.DoubleGrants {
			at = min(at, d.Second.Start)
		}
		// A violation before the fault (an approach racy without it) was
		// caught by the time the fault came: 0, not a negative time that
		// could read as "none".
		co.run.FirstViolationAt = max(0, time.Duration(at-from).Seconds())
	}
	co.run.Status, co.run.Missed = co.verdict.Status, co.verdict.Missed
	co.run.Explanation = co.verdict.Text
	// 8. Artifacts.
	if rec.check != nil {
		name := fmt.Sprintf("timeline-%s.png", c.Name)
		tl := &report.Timeline{Title: fmt.Sprintf("%s, %d clients: who held the lock when", a.Name, n),
			Origin: first, End: last, Intervals: rec.check.Intervals(), Grants: v.DoubleGrants, Faults: windows}
		if err := report.PlotTimeline(filepath.Join(env.dir, name), tl); err == nil {
			co.run.Artifacts = append(co.run.Artifacts, name)
		} else {
			env.logf("warning: %v", err)
		}
		if len(c.Faults) > 0 {
			name := fmt.Sprintf("latency-over-time-%s.png", c.Name)
			lt := &report.LatencyOverTime{Title: fmt.Sprintf("%s: acquire latency over time, faults shaded", a.Name),
				Origin: first, End: last, Points: rec.latencies, Faults: windows}
			if err := report.PlotLatencyOverTime(filepath.Join(env.dir, name), lt); err == nil {
				co.run.Artifacts = append(co.run.Artifacts, name)
			} else {
				env.logf("warning: %v", err)
			}
		}
	}
	return co, nil
}

func outcomeNames(os []verdict.Outcome) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = string(o)
	}
	return out
}

// reportProgress calls env.progress a few times a second until stopped.
func (env *caseEnv) reportProgress(c Case, prog *workload.Progress) (stop func()) {
	if env.progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			env.progress(Status{Case: c.Name, Approach: c.Approach.Name, Clients: c.Workload.Clients, Step: env.step,
				Steps: env.steps, Elapsed: time.Since(start), Duration: c.Workload.Duration, Acquired: prog.Acquired.Load()})
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// cutShort is the verdict of a case that was interrupted (Ctrl-C, a budget
// that ran out): an expected violation it had not shown yet is not a miss,
// since its fault may not even have come; what it did show stands.
func cutShort(r verdict.Result) verdict.Result {
	if !r.Missed {
		return r
	}
	r.Status, r.Missed = verdict.Undecided, false
	r.Text = "cut short before it showed " + strings.Join(outcomeNames(r.Missing), ", ")
	return r
}

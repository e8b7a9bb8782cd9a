// Package runner executes plans: it gets the servers a plan needs, runs
// each case through one numbered flow (see runCase), and hands what it
// measured and judged to report. bench, run and matrix are plans over the
// same flow.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// Status is a progress report while a case runs.
type Status struct {
	Case     string
	Approach string
	Clients  int
	Step     int // 1-based index of this case
	Steps    int
	Elapsed  time.Duration
	Duration time.Duration
	Acquired int64
}

// Runner runs plans.
type Runner struct {
	Progress func(Status) // called a few times a second; may be nil
	Log      func(format string, args ...any)
	// WorkerArgv starts one worker process (cases with Processes); default:
	// this binary with the argument "worker".
	WorkerArgv []string
	// Parallel runs the cases of different server kinds side by side (one
	// lane per kind, and the Redis approaches that use one node on up to
	// spareRedisLanes lanes of their own, each on a Redis node started for
	// it), on one cluster per set of server options (a Redis persistence
	// mode). Cases of one lane stay in order, so a fault on a lane's
	// servers only ever meets that lane's case.
	Parallel bool
	// MaxCases bounds how many cases run at once in a parallel run, across
	// lanes (a lane waits for a slot before each case); 0: DefaultMaxCases.
	// Eight lanes at once on two cores starved the servers: a ZooKeeper
	// ensemble granted a lock once in 4 s, and a restarted member did not
	// rejoin within the health check's 30 s.
	MaxCases int
	// HealthTimeout bounds how long a case waits for its servers to be
	// healthy, before the first fault and after the last heal; default
	// 30 s (a ZooKeeper election or a PostgreSQL recovery takes seconds).
	HealthTimeout time.Duration
}

// Outcome is what a plan produced.
type Outcome struct {
	Dir     string
	Results *report.Results
	// Verdicts holds each finished case's comparison with its expectation,
	// in case order (the CLI's exit code comes from these).
	Verdicts []verdict.Result
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		r.Log(format, args...)
	}
}

// Cluster is what a case needs of the servers.
type Cluster interface {
	Endpoints() impls.Endpoints
	DirectEndpoints() impls.Endpoints
	Healthy(ctx context.Context, timeout time.Duration) error
	Close() error
}

// Run executes the plan's cases in order. On ctx cancellation (Ctrl-C) it
// stops, writes what ran so far marked incomplete, and returns ctx's error.
// results.json is rewritten (atomically) after every case.
func (r *Runner) Run(ctx context.Context, p Plan) (*Outcome, error) {
	if len(p.Cases) == 0 {
		return nil, usageErr(fmt.Errorf("nothing to run"))
	}
	// Usage errors first: nothing is created for a run that cannot start.
	var ext *cluster.ExternalConfig
	if p.External != "" {
		cfg, err := cluster.LoadExternalConfig(ctx, p.External)
		if err != nil {
			return nil, usageErr(err)
		}
		for _, k := range p.servers() {
			if !cfg.Has(k) {
				return nil, usageErr(fmt.Errorf("cluster config %s lists no %s servers, which the approaches need", p.External, k))
			}
		}
		ext = &cfg
	}
	runID := time.Now().UTC().Format("20060102-150405") + "-" + randHex(2)
	dir := filepath.Join(p.ResultsDir, runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, infraErr(fmt.Errorf("results dir: %w", err))
	}
	res := &report.Results{
		RunID: runID, StartedAt: time.Now().UTC(), Config: p.Config,
		Versions: map[string]string{"locklab": version(), "go": runtime.Version()},
		Host:     report.Host{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH},
		Verdict:  report.Verdict{Safe: true}, Runs: []report.Run{},
	}
	out := &Outcome{Dir: dir, Results: res}
	save := func() error { return report.WriteJSON(filepath.Join(dir, "results.json"), res) }
	finish := func(runErr error) (*Outcome, error) {
		res.FinishedAt = time.Now().UTC()
		switch {
		case runErr != nil && ctx.Err() == nil:
			res.Note = runErr.Error()
		case ctx.Err() != nil:
			res.Note = "interrupted: " + context.Cause(ctx).Error()
			runErr = ctx.Err()
		default:
			res.Complete = true
		}
		if err := writeSummary(filepath.Join(dir, "summary.md"), p.Kind, res); err != nil && runErr == nil {
			runErr = infraErr(err)
		}
		if err := report.WriteIndex(dir, p.Kind, res); err != nil && runErr == nil {
			runErr = infraErr(err)
		}
		if err := save(); err != nil && runErr == nil {
			runErr = infraErr(err)
		}
		return out, runErr
	}
	if err := save(); err != nil {
		return out, infraErr(err)
	}

	// The servers: only those the plan's approaches use, started when the
	// first case needs them and again when a case asks for other server
	// options (a Redis persistence mode).
	kinds := p.servers()
	// In parallel, Redis approaches that use one node get nodes of their
	// own, started beside the shared ones.
	sharedRedis, spare := p.redisLanes(r.Parallel)
	var servers *cluster.Cluster
	var serversFor ServerOptions
	defer func() {
		if servers != nil {
			servers.Close()
		}
	}()
	ensureServers := func(c Case) error {
		if len(kinds) == 0 || (servers != nil && serversFor == c.servers()) {
			return nil
		}
		if servers != nil {
			servers.Close()
			servers = nil
		}
		started := time.Now()
		cfg := localConfig(kinds, c.servers())
		if cfg.Nodes[impls.Redis] > 0 {
			cfg.Nodes[impls.Redis] += spare
		}
		cl, err := startCluster(ctx, ext, p.Docker, cfg)
		if err != nil {
			return err
		}
		servers, serversFor = cl, c.servers()
		r.logf("cluster ready in %.2fs: %d nodes", time.Since(started).Seconds(), len(cl.Nodes()))
		for be, v := range cl.Versions {
			res.Versions[string(be)] = v
		}
		return nil
	}

	var hw history.Recorder = history.Discard{}
	var hfile *history.Writer
	if anyRecorded(p) {
		w, err := history.Create(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			return finish(infraErr(err))
		}
		hw, hfile = w, w
	}
	base := caseEnv{history: hw, mono: clock.NewMonotonic(), dir: dir, nonce: randHex(2),
		steps: len(p.Cases), progress: r.Progress, logf: r.logf, workerArgv: r.WorkerArgv, healthTimeout: r.HealthTimeout}
	if base.healthTimeout <= 0 {
		base.healthTimeout = defaultHealthTimeout
	}
	hists := map[string][3]*hdrhistogram.Histogram{}
	var mu sync.Mutex // guards res, out, hists and the step counter between lanes
	step := 0         // cases begun so far (their servers were up)
	var runErr error
	// record keeps one finished case, in the order cases finish.
	record := func(c Case, co caseOutcome) error {
		mu.Lock()
		defer mu.Unlock()
		res.Runs = append(res.Runs, co.run)
		out.Verdicts = append(out.Verdicts, co.verdict)
		tally(&res.Verdict, co)
		hists[c.Name] = [3]*hdrhistogram.Histogram{co.stats.Acquire, co.stats.Release, co.handOff}
		if err := save(); err != nil {
			return infraErr(err)
		}
		return nil
	}
	// runLane runs cases one after the other in one environment.
	maxCases := r.MaxCases
	if maxCases <= 0 {
		maxCases = DefaultMaxCases()
	}
	slots := make(chan struct{}, maxCases)
	runLane := func(lctx context.Context, env *caseEnv, cases []Case) error {
		for _, c := range cases {
			select {
			case slots <- struct{}{}:
			case <-lctx.Done():
				return nil
			}
			mu.Lock()
			step++
			env.step = step
			mu.Unlock()
			co, err := runCase(lctx, env, c)
			<-slots
			if err != nil {
				return err
			}
			if lctx.Err() != nil && ctx.Err() == nil {
				// Cut short because another lane failed: what it saw is
				// not an observation of the case (a violation it was due
				// to show would read as missed). The run reports the
				// other lane's error.
				return nil
			}
			if err := record(c, co); err != nil {
				return err
			}
		}
		return nil
	}
	if !r.Parallel {
		env := base
		for _, c := range p.Cases {
			if ctx.Err() != nil {
				break
			}
			if err := ensureServers(c); err != nil {
				runErr = err
				break
			}
			env.useServers(servers)
			if err := runLane(ctx, &env, []Case{c}); err != nil {
				runErr = err
				break
			}
		}
	} else {
		// Cases that ask for the same server options share one cluster;
		// within it, lanes of different server kinds run side by side: a
		// fault on one kind's servers cannot touch another kind's case.
		// Each lane numbers its processes in a range of its own, across
		// every group, since all of them write one history.
		lanesSoFar := 0
		for _, group := range groupsByServers(p.Cases) {
			if ctx.Err() != nil {
				break
			}
			if runErr = ensureServers(group[0]); runErr != nil {
				break
			}
			lanes := planLanes(group, sharedRedis, spare)
			lctx, cancel := context.WithCancel(ctx)
			errs := make([]error, len(lanes))
			var wg sync.WaitGroup
			for i, lane := range lanes {
				env := base
				env.useServers(servers)
				env.procBase = (lanesSoFar + i + 1) * laneProcs
				env.redis = lane.redis
				wg.Add(1)
				go func(i int, env caseEnv, cases []Case) {
					defer wg.Done()
					if errs[i] = runLane(lctx, &env, cases); errs[i] != nil {
						cancel()
					}
				}(i, env, lane.cases)
			}
			wg.Wait()
			cancel()
			lanesSoFar += len(lanes)
			for _, err := range errs {
				if err != nil && !errors.Is(err, context.Canceled) {
					runErr = err
					break
				}
			}
			if runErr != nil {
				break
			}
		}
	}
	res.Runs, out.Verdicts = inPlanOrder(p.Cases, res.Runs, out.Verdicts)
	if hfile != nil {
		if err := hfile.Close(); err != nil && runErr == nil {
			runErr = infraErr(fmt.Errorf("history: %w", err))
		}
	}
	if runErr != nil && step == 0 && ctx.Err() == nil {
		// The servers never came up (an image missing, a server
		// unreachable): nothing was observed, and a folder holding only
		// the error would read as a run. The error says what happened.
		// (A Ctrl-C keeps its folder, marked incomplete, as it says.)
		if err := os.RemoveAll(dir); err != nil {
			return finish(runErr)
		}
		return nil, runErr
	}
	res.Artifacts = []string{"index.html", "results.json", "summary.md"}
	if hfile != nil {
		res.Artifacts = append(res.Artifacts, "history.jsonl")
	}
	res.Artifacts = append(res.Artifacts, writeArtifacts(dir, p, res.Runs, hists, r.logf)...)
	for _, run := range res.Runs {
		res.Artifacts = append(res.Artifacts, run.Artifacts...)
	}
	return finish(runErr)
}

func anyRecorded(p Plan) bool {
	for _, c := range p.Cases {
		if c.Record {
			return true
		}
	}
	return false
}

// tally adds one case to the run's overall verdict.
func tally(v *report.Verdict, co caseOutcome) {
	v.DoubleGrants += co.run.DoubleGrants
	v.Violations += co.run.ViolationCount
	if co.run.Linearizable == checker.LinNo {
		v.NonLinearizable++
	}
	v.Safe = v.Safe && co.run.Safe() // it starts true
	switch co.verdict.Status {
	case verdict.Agrees:
		v.AsExpected++
	case verdict.Contradicts:
		v.Contradicted++
	case verdict.Undecided:
		v.Undecided++
	}
}

// localConfig is how the servers of kinds are started locally for cases
// running with opts.
func localConfig(kinds []impls.Server, opts ServerOptions) cluster.LocalConfig {
	cfg := cluster.ForServers(kinds...)
	cfg.RedisPersistence = opts.RedisPersistence
	cfg.FakeTime = opts.FakeTime // such servers run under libfaketime from the start
	return cfg
}

// startCluster starts the servers locally (as processes, or as containers
// when docker is set), or connects to the user's.
func startCluster(ctx context.Context, ext *cluster.ExternalConfig, docker *Docker, cfg cluster.LocalConfig) (*cluster.Cluster, error) {
	if docker != nil {
		cl, err := cluster.StartDocker(ctx, cluster.DockerConfig{LocalConfig: cfg, Images: docker.Images})
		if err != nil {
			return nil, infraErr(fmt.Errorf("start containers: %w", err))
		}
		return cl, nil
	}
	if ext != nil {
		cl, err := cluster.ConnectExternal(ctx, *ext)
		if err != nil {
			return nil, infraErr(err)
		}
		return cl, nil
	}
	cl, err := cluster.StartLocal(ctx, cfg)
	if err != nil {
		return nil, infraErr(fmt.Errorf("start servers: %w", err))
	}
	return cl, nil
}

// inPlanOrder puts runs in the plan's case order, whatever order the lanes
// finished in; each verdict stays with its run (vs[i] is runs[i]'s), since
// the gate reads them side by side.
func inPlanOrder(cases []Case, runs []report.Run, vs []verdict.Result) ([]report.Run, []verdict.Result) {
	order := map[string]int{}
	for i, c := range cases {
		order[c.Name] = i
	}
	byPlan := make([]int, len(runs))
	for i := range byPlan {
		byPlan[i] = i
	}
	sort.SliceStable(byPlan, func(i, j int) bool { return order[runs[byPlan[i]].Case] < order[runs[byPlan[j]].Case] })
	sortedRuns, sortedVs := make([]report.Run, len(runs)), make([]verdict.Result, len(vs))
	for to, from := range byPlan {
		sortedRuns[to], sortedVs[to] = runs[from], vs[from]
	}
	return sortedRuns, sortedVs
}

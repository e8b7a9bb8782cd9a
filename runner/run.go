// Package runner executes plans: it gets the servers a plan needs, runs
// each case through one numbered flow (see runCase), and hands what it
// measured and judged to report. bench, run and matrix are plans over the
// same flow.
package runner

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
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
	// ProbeArgv runs the stall probe in a container beside the servers
	// (Docker mode; it is mounted there, so it must run on the image's
	// system); default: this binary with the argument "probe".
	ProbeArgv []string
	// Parallel runs cases side by side (lanes.go): on one cluster per set
	// of server options (a persistence mode), each case on a lane of
	// servers: its kind's, or where the kind's nodes make lanes
	// (cluster.Kind.Lanes), a spare node for the approaches that use one,
	// a second lane for the others. A case whose faults reach a server
	// has its lane to itself, so such a fault only ever meets that case;
	// with Plan.ShareServers, cases whose faults reach only their own
	// clients share theirs.
	Parallel bool
	// MaxCases bounds how many cases run at once in a parallel run;
	// 0: DefaultMaxCases. (Before cases shared servers, eight lanes at once
	// on two cores starved the servers: a ZooKeeper ensemble granted a lock
	// once in 4 s. The stall monitor now says when the lab went too far.)
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

// Run executes the plan's cases: Open, RunCases, Close. On ctx
// cancellation (Ctrl-C) it stops, writes what ran so far marked
// incomplete, and returns ctx's error. results.json is rewritten
// (atomically) after every case.
func (r *Runner) Run(ctx context.Context, p Plan) (*Outcome, error) {
	x, out, err := r.open(ctx, p)
	if err != nil {
		return out, err
	}
	return x.Close(ctx, x.s.runCases(ctx, p.Cases, nil))
}

// open starts the session of plan p: its results folder, results.json,
// history and stall monitor. Usage errors come first: nothing is created
// for a plan that cannot start. On an error after the folder was made, the
// outcome is what was written.
func (r *Runner) open(ctx context.Context, p Plan) (*Session, *Outcome, error) {
	if len(p.Cases) == 0 {
		return nil, nil, usageErr(fmt.Errorf("nothing to run"))
	}
	if err := checkExternalKinds(p.External, p.servers()); err != nil {
		return nil, nil, err
	}
	s, err := newSession(r, p, p.External)
	if err != nil {
		return nil, nil, err
	}
	if err := s.save(); err != nil {
		return nil, s.out, infraErr(err)
	}
	if err := s.openHistory(); err != nil {
		out, err := s.finish(ctx, err)
		return nil, out, err
	}
	return &Session{s: s, stopWatch: s.watchStalls(ctx)}, nil, nil
}

// LoadExternal reads the user's cluster config at path (--cluster
// external --config path); allowRemote is --allow-remote. A bad config is
// a usage error.
func LoadExternal(ctx context.Context, path string, allowRemote bool) (*cluster.ExternalConfig, error) {
	cfg, err := cluster.LoadExternalConfig(ctx, path, allowRemote)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, usageErr(err)
	}
	return &cfg, nil
}

// checkExternalKinds: the user's config (nil: none) must list servers of
// every kind in kinds.
func checkExternalKinds(ext *cluster.ExternalConfig, kinds []impls.Server) error {
	if ext == nil {
		return nil
	}
	for _, k := range kinds {
		if !ext.Has(k) {
			return usageErr(fmt.Errorf("cluster config %s lists no %s servers, which the approaches need", ext.Path, k))
		}
	}
	return nil
}

// StartServers has servers of the given kinds running as a plan's are:
// started on this machine (each kind with its default number of nodes),
// as containers (docker set), or the user's own (external). Errors wrap
// ErrUsage (a config that lacks a kind) or ErrInfra (servers that did not
// start). The caller closes the cluster.
func StartServers(ctx context.Context, external *cluster.ExternalConfig, docker *Docker, kinds []impls.Server) (*cluster.Cluster, error) {
	if err := checkExternalKinds(external, kinds); err != nil {
		return nil, err
	}
	return startCluster(ctx, external, docker, localConfig(kinds, ServerOptions{}))
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
	cfg.Settings = opts.Settings
	cfg.FakeTime = opts.FakeTime // such servers run under libfaketime from the start
	return cfg
}

// startCluster starts the servers locally (as processes, or as containers
// when docker is set), or connects to the user's.
func startCluster(ctx context.Context, ext *cluster.ExternalConfig, docker *Docker, cfg cluster.LocalConfig) (*cluster.Cluster, error) {
	if docker != nil {
		cl, err := cluster.StartDocker(ctx, cluster.DockerConfig{LocalConfig: cfg, Images: docker.Images, AllowRemote: docker.AllowRemote, Connect: docker.Connect})
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

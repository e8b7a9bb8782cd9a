// Package runner executes benches: it gets a cluster, builds one Locker per
// client from the registry, drives the workload, streams the history,
// checks it, and hands the measurements to report.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
)

// Error classes, for the CLI's exit codes. Errors are tagged with a class
// without changing their message.
var (
	ErrUsage = errors.New("bad usage")              // exit 2
	ErrInfra = errors.New("infrastructure failure") // exit 3
)

type classed struct{ class, err error }

func (c classed) Error() string   { return c.err.Error() }
func (c classed) Unwrap() []error { return []error{c.class, c.err} }

func usageErr(err error) error { return classed{ErrUsage, err} }
func infraErr(err error) error { return classed{ErrInfra, err} }

// BenchConfig is everything `locklab bench` takes.
type BenchConfig struct {
	Backends       []string       `json:"backends"`
	Clients        []int          `json:"clients"`
	Duration       time.Duration  `json:"-"`
	Keys           int            `json:"keys"`
	Hold           scenarios.Dist `json:"-"`
	TTL            time.Duration  `json:"-"`
	AcquireTimeout time.Duration  `json:"-"`
	Seed           uint64         `json:"seed"`
	ResultsDir     string         `json:"results_dir"`
	External       string         `json:"external_config,omitempty"` // YAML of server addresses; "" = start locally
	Direct         bool           `json:"direct"`                    // bypass the fault-injecting proxies
	Workload       string         `json:"workload"`                  // mutex, counter or tasks
	Fenced         bool           `json:"fenced"`                    // the store refuses stale fencing tokens
	NoHistory      bool           `json:"no_history"`                // record nothing, check nothing (to measure recording's cost)
}

// configJSON is how the config appears in results.json, durations readable.
func (c BenchConfig) configJSON() map[string]any {
	return map[string]any{
		"backends": c.Backends, "clients": c.Clients, "duration": c.Duration.String(), "keys": c.Keys,
		"hold": c.Hold.String(), "ttl": c.TTL.String(), "acquire_timeout": c.AcquireTimeout.String(),
		"seed": c.Seed, "cluster": map[bool]string{true: "external", false: "local"}[c.External != ""],
		"external_config": c.External, "via_proxy": !c.Direct, "workload": c.workload(), "fenced": c.Fenced,
		"recorded": !c.NoHistory,
	}
}

func (c BenchConfig) workload() string {
	if c.Workload == "" {
		return "mutex"
	}
	return c.Workload
}

// Status is a progress report while a bench runs.
type Status struct {
	Backend  string
	Clients  int
	Step     int // 1-based index of this backend/clients pair
	Steps    int
	Elapsed  time.Duration
	Duration time.Duration
	Acquired int64
}

// Bench runs benches against approaches from Registry.
type Bench struct {
	Registry *impls.Registry
	Progress func(Status) // called a few times a second; may be nil
	Log      func(format string, args ...any)
}

// Outcome is what a bench produced.
type Outcome struct {
	Dir     string
	Results *report.Results
}

func (b *Bench) logf(format string, args ...any) {
	if b.Log != nil {
		b.Log(format, args...)
	}
}

// Validate checks a config before anything starts.
func (b *Bench) Validate(cfg BenchConfig) ([]impls.Approach, error) {
	if len(cfg.Backends) == 0 {
		return nil, usageErr(fmt.Errorf("no backends (known: %v)", b.Registry.Names()))
	}
	var as []impls.Approach
	for _, name := range cfg.Backends {
		a, err := b.Registry.Get(name)
		if err != nil {
			return nil, usageErr(err)
		}
		as = append(as, a)
	}
	if len(cfg.Clients) == 0 {
		return nil, fmt.Errorf("%w: no client counts", ErrUsage)
	}
	for _, c := range cfg.Clients {
		if c < 1 || c > 4096 {
			return nil, usageErr(fmt.Errorf("client count %d out of range 1..4096", c))
		}
	}
	w := scenarios.MutexConfig{Clients: 1, Keys: cfg.Keys, Duration: cfg.Duration, TTL: cfg.TTL}
	if err := w.Validate(); err != nil {
		return nil, usageErr(err)
	}
	if err := scenarios.CheckWorkload(cfg.Workload); err != nil {
		return nil, usageErr(err)
	}
	return as, nil
}

// Run executes the bench. On ctx cancellation (Ctrl-C) it stops, writes
// what ran so far marked incomplete, and returns ctx's error with it.
func (b *Bench) Run(ctx context.Context, cfg BenchConfig) (*Outcome, error) {
	approaches, err := b.Validate(cfg)
	if err != nil {
		return nil, err
	}
	runID := time.Now().UTC().Format("20060102-150405") + "-" + randHex(2)
	dir := filepath.Join(cfg.ResultsDir, runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, infraErr(fmt.Errorf("results dir: %w", err))
	}
	res := &report.Results{
		RunID: runID, StartedAt: time.Now().UTC(), Config: cfg.configJSON(),
		Versions: map[string]string{"locklab": version(), "go": runtime.Version()},
		Host:     report.Host{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH},
		Verdict:  report.Verdict{Safe: true}, Runs: []report.Run{},
	}
	out := &Outcome{Dir: dir, Results: res}
	save := func() error { return report.WriteJSON(filepath.Join(dir, "results.json"), res) }
	if err := save(); err != nil {
		return out, infraErr(err)
	}

	// The cluster: only the backends this bench uses.
	var backends []impls.Backend
	for _, a := range approaches {
		backends = append(backends, a.Backend)
	}
	started := time.Now()
	cl, err := b.cluster(ctx, cfg, backends)
	if err != nil {
		res.Note = err.Error()
		_ = save()
		return out, err
	}
	defer cl.Close()
	b.logf("cluster ready in %.2fs: %d nodes", time.Since(started).Seconds(), len(cl.Nodes()))
	for be, v := range cl.Versions {
		res.Versions[string(be)] = v
	}

	var hw recorder = discard{}
	if !cfg.NoHistory {
		w, err := history.Create(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			return out, infraErr(err)
		}
		hw = w
	}
	mono := clock.NewMonotonic()
	hists := map[string]map[int][2]*hdrhistogram.Histogram{}
	nonce := randHex(2)
	procBase := 0
	step, steps := 0, len(approaches)*len(cfg.Clients)
	var runErr error
	for _, a := range approaches {
		for _, n := range cfg.Clients {
			step++
			if ctx.Err() != nil {
				break
			}
			run, stats, err := b.segment(ctx, cl, a, n, cfg, hw, mono, procBase, nonce, step, steps, dir)
			procBase += n
			if err != nil {
				runErr = err
				break
			}
			res.Runs = append(res.Runs, run)
			res.Verdict.DoubleGrants += run.DoubleGrants
			res.Verdict.Violations += run.ViolationCount
			if run.Linearizable == "no" {
				res.Verdict.NonLinearizable++
			}
			if hists[a.Name] == nil {
				hists[a.Name] = map[int][2]*hdrhistogram.Histogram{}
			}
			hists[a.Name][n] = [2]*hdrhistogram.Histogram{stats.Acquire, stats.Release}
			if err := save(); err != nil {
				runErr = infraErr(err)
				break
			}
		}
		if runErr != nil {
			break
		}
	}
	if err := hw.Close(); err != nil && runErr == nil {
		runErr = infraErr(fmt.Errorf("history: %w", err))
	}
	res.Verdict.Safe = res.Verdict.Violations == 0 && res.Verdict.NonLinearizable == 0
	res.Artifacts = []string{"results.json", "summary.md"}
	if !cfg.NoHistory {
		res.Artifacts = append(res.Artifacts, "history.jsonl")
	}
	res.Artifacts = append(res.Artifacts, writeArtifacts(dir, cfg, res.Runs, hists, b.logf)...)
	for _, r := range res.Runs {
		res.Artifacts = append(res.Artifacts, r.Artifacts...)
	}
	res.FinishedAt = time.Now().UTC()
	switch {
	case runErr != nil:
		res.Note = runErr.Error()
	case ctx.Err() != nil:
		res.Note = "interrupted: " + context.Cause(ctx).Error()
		runErr = ctx.Err()
	default:
		res.Complete = true
	}
	if err := writeSummary(filepath.Join(dir, "summary.md"), res); err != nil && runErr == nil {
		runErr = infraErr(err)
	}
	if err := save(); err != nil && runErr == nil {
		runErr = infraErr(err)
	}
	return out, runErr
}

func (b *Bench) cluster(ctx context.Context, cfg BenchConfig, backends []impls.Backend) (*cluster.Cluster, error) {
	if cfg.External != "" {
		ext, err := cluster.LoadExternalConfig(cfg.External)
		if err != nil {
			return nil, usageErr(err)
		}
		cl, err := cluster.ConnectExternal(ctx, ext)
		if err != nil {
			return nil, infraErr(err)
		}
		return cl, nil
	}
	cl, err := cluster.StartLocal(ctx, cluster.ForBackends(backends...))
	if err != nil {
		return nil, infraErr(fmt.Errorf("start servers: %w", err))
	}
	return cl, nil
}

// recorder is where events go: the history file, or nowhere.
type recorder interface {
	Record(history.Event) history.Event
	Close() error
}

// discard records nothing, to measure what recording costs.
type discard struct{}

func (discard) Record(ev history.Event) history.Event { return ev }
func (discard) Close() error                          { return nil }

// checkingRecorder writes each event to the history and feeds the
// segment's checker.
type checkingRecorder struct {
	w     recorder
	mu    sync.Mutex
	check *checker.Checker
	last  int64
}

func (r *checkingRecorder) Record(ev history.Event) history.Event {
	ev = r.w.Record(ev)
	r.mu.Lock()
	if r.check != nil {
		r.check.Add(ev)
	}
	r.last = max(r.last, ev.T)
	r.mu.Unlock()
	return ev
}

// segment runs one approach at one client count.
func (b *Bench) segment(ctx context.Context, cl *cluster.Cluster, a impls.Approach, n int, cfg BenchConfig,
	hw recorder, mono *clock.Monotonic, procBase int, nonce string, step, steps int, dir string) (report.Run, scenarios.MutexStats, error) {
	ep := cl.Endpoints()
	if cfg.Direct {
		ep = cl.DirectEndpoints()
	}
	clients, err := newClients(ctx, a, ep, n, procBase)
	if err != nil {
		return report.Run{}, scenarios.MutexStats{}, err
	}
	defer func() {
		for _, c := range clients {
			c.Locker.Close()
		}
	}()
	rec := &checkingRecorder{w: hw}
	if !cfg.NoHistory {
		rec.check = checker.New(true)
	}
	prog := &scenarios.Progress{}
	wcfg := scenarios.MutexConfig{
		Clients: n, Keys: cfg.Keys, Hold: cfg.Hold, TTL: cfg.TTL, Duration: cfg.Duration, Seed: cfg.Seed,
		AcquireTimeout: cfg.AcquireTimeout, KeyPrefix: fmt.Sprintf("%s/%s/c%d/", nonce, a.Name, n), ProcBase: procBase,
		Work: cfg.workload(), Store: scenarios.NewStore(rec, mono, cfg.Fenced, 1_000_000),
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if b.Progress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				b.Progress(Status{Backend: a.Name, Clients: n, Step: step, Steps: steps, Elapsed: time.Since(start),
					Duration: cfg.Duration, Acquired: prog.Acquired.Load()})
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
	}
	stats, err := scenarios.RunMutex(ctx, wcfg, clients, rec, mono, prog)
	close(done)
	wg.Wait()
	if err != nil {
		return report.Run{}, stats, usageErr(err)
	}
	run := report.Run{
		Backend: a.Name, Clients: n, Seconds: stats.Elapsed.Seconds(), Acquired: stats.Acquired,
		AcquiresPerSec: float64(stats.Acquired) / stats.Elapsed.Seconds(),
		NotAcquired:    stats.NotAcquired, Indeterminate: stats.Indeterminate, Errors: stats.Errors,
		FirstError: stats.FirstError, ReleaseNotHeld: stats.ReleaseNotHeld,
		Acquire: report.Summarise(stats.Acquire), Release: report.Summarise(stats.Release),
		Complete: ctx.Err() == nil, Linearizable: "not checked",
	}
	if rec.check == nil {
		return run, stats, nil
	}
	// The verdict is computed even after Ctrl-C: what ran is still judged.
	v, err := rec.check.Verdict(context.WithoutCancel(ctx), checker.Options{
		TimeLimit: 10 * time.Second, HTMLDir: filepath.Join(dir, "linearizability")})
	if err != nil {
		return run, stats, infraErr(fmt.Errorf("check: %w", err))
	}
	run.DoubleGrants = len(v.DoubleGrants)
	run.ViolationCount = len(v.Violations)
	run.Linearizable = v.Linearizable
	run.RefusedStaleRequests = v.RefusedWrites
	run.ViolationKinds = map[string]int{}
	for i, x := range v.Violations {
		run.ViolationKinds[x.Kind]++
		if i < 10 {
			run.Violations = append(run.Violations, x.Kind+": "+x.Text)
		}
	}
	if len(v.Violations) > 10 {
		run.Violations = append(run.Violations, fmt.Sprintf("... and %d more", len(v.Violations)-10))
	}
	for _, r := range v.Linear {
		if r.HTML != "" {
			rel, _ := filepath.Rel(dir, r.HTML)
			run.Artifacts = append(run.Artifacts, rel)
		}
	}
	name := fmt.Sprintf("timeline-%s-c%d.png", a.Name, n)
	tl := &report.Timeline{Title: fmt.Sprintf("%s, %d clients: who held the lock when", a.Name, n),
		Origin: v.Origin, End: rec.last, Intervals: rec.check.Intervals(), Grants: v.DoubleGrants}
	if err := report.PlotTimeline(filepath.Join(dir, name), tl); err == nil {
		run.Artifacts = append(run.Artifacts, name)
	} else {
		b.logf("warning: %v", err)
	}
	return run, stats, nil
}

// newClients connects n clients in parallel, each with its own
// connections and its own clock.
func newClients(ctx context.Context, a impls.Approach, ep impls.Endpoints, n, procBase int) ([]scenarios.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	clients := make([]scenarios.Client, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			clk := &clock.Skewable{}
			l, err := a.New(ctx, impls.Env{Endpoints: ep, Clock: clk, ClientID: procBase + i})
			clients[i], errs[i] = scenarios.Client{Locker: l, Clock: clk}, err
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clients {
			if c.Locker != nil {
				c.Locker.Close()
			}
		}
		return nil, infraErr(fmt.Errorf("connect %s clients: %w", a.Name, firstErr(errs)))
	}
	return clients, nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// version is the VCS revision locklab was built from, when known.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += "+dirty"
			}
		}
	}
	return v
}

package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// Plan is what to run: cases, in order, on one cluster. `bench` is a plan
// with no faults swept over approaches and client counts; `run` is a plan
// from one scenario file; `matrix` is approaches x fault scenarios.
type Plan struct {
	Kind       string // bench, run, matrix: the title of summaries
	Cases      []Case
	ResultsDir string // results/<run-id>/ goes here
	// External, when set, is the user's servers (--cluster external).
	External *cluster.ExternalConfig
	// Docker, when set, starts the servers as containers (--cluster docker).
	Docker *Docker
	Config any // the settings as given, echoed into results.json
	// Repeats is how many times each approach's case runs (run --runs):
	// the summary then counts, per approach, the runs that agreed.
	Repeats int
	// Lean writes no latency files or plots but the timelines of the
	// cases that showed a violation: a search runs hundreds of short
	// cases (locklab explore), whose plots would cost more than the cases.
	Lean bool
	// EndWhenAnswered ends each case once it answered its question (it
	// showed the violation it was expected to, or watched a fault through
	// and enough grants after it: answer.go); its duration is the longest
	// it runs. matrix and repeated runs set it.
	EndWhenAnswered bool
	// ShareServers lets cases whose faults reach no server (only their own
	// clients, clocks and links) run at the same time on the same servers,
	// each on keys of its own; a case whose faults reach a server still has
	// its lane's servers to itself. matrix and repeated runs set it; bench
	// does not (cases side by side would take each other's throughput).
	ShareServers bool
	// StallThreshold is how late a wake-up of the stall monitor's probes
	// must be to be a stall of the lab: 0, stall.DefaultThreshold;
	// negative, no stall monitor.
	StallThreshold time.Duration
}

// Docker is how a plan's servers run as containers.
type Docker struct {
	Images map[impls.Server]string // per server kind; missing: cluster.PublicImages
	// AllowRemote: the engine may be on another host (--allow-remote).
	AllowRemote bool
	// Connect reaches the container engine (cluster/docker.Connect; the
	// program that runs containers links it, so that runner does not).
	Connect cluster.Connect
}

// images are the images asked for, for results.json (nil: not Docker).
func (d *Docker) images() map[impls.Server]string {
	if d == nil {
		return nil
	}
	return cluster.Images(d.Images)
}

// clusterMode names where the servers run, for results.json.
func clusterMode(external *cluster.ExternalConfig, docker *Docker) string {
	switch {
	case external != nil:
		return "external"
	case docker != nil:
		return "docker"
	}
	return "local"
}

// externalPath is the user's cluster config file, for results.json.
func externalPath(ext *cluster.ExternalConfig) string {
	if ext == nil {
		return ""
	}
	return ext.Path
}

// ServerOptions say how the servers of a plan are run (locally).
type ServerOptions struct {
	// Settings are how each kind's servers run where not at its
	// defaults (cluster.Kind.Settings: a persistence mode).
	Settings cluster.Settings
	// FakeTime runs the servers that can take it under libfaketime, so a
	// case can jump their clocks. Case.servers sets it for the cases with
	// a server-clock fault, and only for them: a JVM under libfaketime
	// burns CPU while idle (a ZooKeeper ensemble under it took about 1.8
	// of 2 cores for a whole matrix run, when one cell in 15 needed it).
	FakeTime bool
}

// ServerOptions is the server options c runs with: those it asks for,
// under libfaketime when a fault of c jumps a server's clock. Cases asking
// for other options than those running wait for servers started anew.
func (c Case) ServerOptions() ServerOptions {
	o := c.Servers
	for _, st := range c.Faults {
		if chaos.NeedsOf(st.Fault).ServerClock {
			o.FakeTime = true
		}
	}
	return o
}

// movesClientClocks says whether a fault of c moves a client's clock: an
// adapter's process then reads a clock that follows it.
func (c Case) movesClientClocks() bool {
	for _, st := range c.Faults {
		if chaos.NeedsOf(st.Fault).ClientClock {
			return true
		}
	}
	return false
}

// Case is one approach under one setting for one duration.
type Case struct {
	Name     string // unique within the plan, safe in file names
	Approach impls.Approach
	// Workload is what the clients do; KeyPrefix, ProcBase and Store are
	// set by the runner.
	Workload workload.Spec
	Direct   bool // clients connect straight to the servers (no fault can touch their links)
	Record   bool // record and check the history (false: measure what recording costs)
	// Processes runs each client as a `locklab worker` process instead of
	// a goroutine: needed when a fault pauses or kills a client whole.
	Processes bool
	// Faults are injected on a schedule while the workload runs.
	Faults []chaos.Step
	// Servers say how the servers run for this case; cases asking for
	// other options than the case before get servers started anew.
	Servers ServerOptions
	Expect  verdict.Expectation
	// Round is the run of a repeated case (a matrix cell's run n): in
	// parallel, every case of round 1 waits to start before any of round 2.
	Round int
	// EndWhenAnswered ends this case once it answered its question
	// (answer.go), whatever the plan says: a shrink's run of a schedule
	// that is to show one violation needs nothing after it.
	EndWhenAnswered bool
}

// Validate checks a case before anything starts.
func (c Case) Validate() error {
	w := c.Workload
	if w.Kind != workload.Counter && w.Kind != workload.Tasks {
		// A stand-in so Validate can check the rest: the runner gives
		// every case its own store.
		w.Store = nil
	} else {
		w.Store = &workload.Store{}
	}
	if err := w.Validate(); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	if c.Workload.Reentry > 0 && !c.Approach.Caps.Reentrant {
		return fmt.Errorf("%s: reentry %v asks %s to re-enter, and it does not declare reentrant", c.Name, c.Workload.Reentry, c.Approach.Name)
	}
	if c.Workload.Clients > 4096 {
		return fmt.Errorf("%s: client count %d out of range 1..4096", c.Name, c.Workload.Clients)
	}
	if c.Direct && needsProxies(c.Faults) {
		return fmt.Errorf("%s: a fault acts on network links, which needs the clients to go through the proxies", c.Name)
	}
	if _, err := compileFaults(c); err != nil {
		return err
	}
	return nil
}

// BenchConfig is everything `locklab bench` takes.
type BenchConfig struct {
	Approaches []string
	Clients    []int // the client counts to run each approach at
	// Workload is what the clients do, at each client count (its Clients
	// is set per case).
	Workload   workload.Spec
	ResultsDir string
	External   *cluster.ExternalConfig // the user's servers; nil: start them
	Docker     *Docker                 // start the servers as containers
	Direct     bool                    // bypass the fault-injecting proxies
	NoHistory  bool                    // record nothing, check nothing (to measure recording's cost)
	// Processes runs each client as a process of its own (Case.Processes).
	Processes bool
}

// Validate says whether the settings are what `locklab bench` takes: a
// positive duration, TTL and acquire timeout, and an open loop's rate
// positive and not with client processes. BenchPlan refuses less: there,
// a zero TTL or acquire timeout is the workload's default.
func (c BenchConfig) Validate() error {
	w := c.Workload
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"duration", w.Duration}, {"ttl", w.TTL}, {"acquire-timeout", w.AcquireTimeout}} {
		if d.d <= 0 {
			return fmt.Errorf("--%s %v: must be positive", d.name, d.d)
		}
	}
	if w.Rate < 0 || w.Rate > 0 && c.Processes {
		return fmt.Errorf("--rate %v: want a positive rate, and not with --processes", w.Rate)
	}
	return nil
}

// configJSON is how the config appears in results.json, durations readable.
func (c BenchConfig) configJSON() map[string]any {
	w := c.workload()
	return map[string]any{
		"approaches": c.Approaches, "clients": c.Clients, "duration": w.Duration.String(), "keys": w.Keys,
		"hold": w.Hold.String(), "ttl": w.TTL.String(), "acquire_timeout": w.AcquireTimeout.String(),
		"seed": w.Seed, "cluster": clusterMode(c.External, c.Docker),
		"external_config": externalPath(c.External), "images": c.Docker.images(), "via_proxy": !c.Direct, "workload": w.Kind, "fenced": w.Fenced,
		"recorded": !c.NoHistory, "rate_per_sec": w.Rate,
	}
}

// workload is the bench's workload with its kind defaulted (mutex).
func (c BenchConfig) workload() workload.Spec {
	w := c.Workload
	if w.Kind == "" {
		w.Kind = workload.Mutex
	}
	return w
}

// BenchPlan turns bench settings into a plan: every approach at every
// client count. An approach declared safe must stay safe; the others are
// benched for speed and expected nothing.
func BenchPlan(reg *impls.Registry, cfg BenchConfig) (Plan, error) {
	if len(cfg.Approaches) == 0 {
		return Plan{}, usageErr(fmt.Errorf("no approaches (known: %v)", reg.Names()))
	}
	if len(cfg.Clients) == 0 {
		return Plan{}, usageErr(fmt.Errorf("no client counts"))
	}
	if err := workload.CheckKind(cfg.Workload.Kind); err != nil {
		return Plan{}, usageErr(err)
	}
	p := Plan{Kind: "bench", ResultsDir: cfg.ResultsDir, External: cfg.External, Docker: cfg.Docker, Config: cfg.configJSON()}
	for _, name := range cfg.Approaches {
		a, err := reg.Get(name)
		if err != nil {
			return Plan{}, usageErr(err)
		}
		for _, n := range cfg.Clients {
			c := Case{Name: fmt.Sprintf("%s-c%d", a.Name, n), Approach: a, Direct: cfg.Direct, Record: !cfg.NoHistory,
				Processes: cfg.Processes, Workload: cfg.workload()}
			c.Workload.Clients = n
			// Without a history there is nothing to check safety on: a
			// bench that measures recording's cost expects nothing, and
			// its exit says nothing of the lock.
			if a.Safe && !cfg.NoHistory {
				c.Expect = verdict.Expect("declared safe under plain contention", verdict.Safe)
			}
			if err := c.Validate(); err != nil {
				return Plan{}, usageErr(err)
			}
			p.Cases = append(p.Cases, c)
		}
	}
	return p, nil
}

// servers lists the server kinds a plan's approaches run against, once each.
func (p Plan) servers() []impls.Server {
	seen := map[impls.Server]bool{}
	var out []impls.Server
	for _, c := range p.Cases {
		if b := c.Approach.Server; b != "" && !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	return out
}

// ScenarioOptions adjust a scenario at the command line.
type ScenarioOptions struct {
	Approaches []string      // run only these of the scenario's approaches
	Seed       *uint64       // override the scenario's seed
	Duration   time.Duration // override the scenario's duration; 0: as written
	ResultsDir string
	External   *cluster.ExternalConfig
	Docker     *Docker
	// Runs repeats each approach's case this many times, run i with seed
	// seed+i (0 or 1: once, named after the approach alone).
	Runs int
}

// ScenarioPlan makes a plan from a scenario: one case per approach, with
// the scenario's workload and faults, and its expectation for that
// approach (or, where it states none, what the approach's declarations
// predict: safe when it is declared safe and nothing is injected).
func ScenarioPlan(reg *impls.Registry, s *scenario.Scenario, opt ScenarioOptions) (Plan, error) {
	names := s.Approaches
	if len(opt.Approaches) > 0 {
		for _, a := range opt.Approaches {
			if !slices.Contains(s.Approaches, a) {
				hint := ""
				if near := impls.Nearest(a, s.Approaches); near != "" {
					hint = fmt.Sprintf(": did you mean %q?", near)
				}
				return Plan{}, usageErr(fmt.Errorf("--approach %s: not among the scenario's approaches%s (%s); a scenario runs the approaches it names: copy it and name yours, or server:KIND for every approach of a server kind", a, hint, strings.Join(s.Approaches, ", ")))
			}
		}
		names = opt.Approaches
	}
	if s.Servers.In == "docker" && opt.Docker == nil {
		return Plan{}, usageErr(fmt.Errorf("scenario %s runs its servers in containers (servers: {in: docker}): run it with --cluster docker", s.Name))
	}
	seed := s.Seed
	if opt.Seed != nil {
		seed = *opt.Seed
	}
	duration := s.Duration
	if opt.Duration > 0 {
		duration = opt.Duration
	}
	runs := max(opt.Runs, 1)
	if runs > 1000 {
		return Plan{}, usageErr(fmt.Errorf("--runs %d: at most 1000", runs))
	}
	p := Plan{Kind: "run " + s.Name, ResultsDir: opt.ResultsDir, External: opt.External, Docker: opt.Docker, Repeats: runs, StallThreshold: s.StallThreshold,
		Config: map[string]any{"cluster": clusterMode(opt.External, opt.Docker), "images": opt.Docker.images(), "scenario": s.Name, "file": s.Path, "description": s.Description, "seed": seed,
			"approaches": names, "duration": duration.String(), "workload": s.Workload.Kind, "clients": s.Workload.Clients,
			"processes": s.Processes, "fenced": s.Workload.Fenced, "runs": runs}}
	// Repeated runs count how many agree: each ends once it answered,
	// and those whose faults reach no server share them. One run shows
	// the whole scenario.
	p.EndWhenAnswered, p.ShareServers = runs > 1, runs > 1
	known, err := matrix.ShippedExpectations()
	if err != nil {
		return Plan{}, err
	}
	for _, name := range names {
		a, err := reg.Get(name)
		if err != nil {
			return Plan{}, usageErr(err)
		}
		for i := range runs {
			c, err := scenarioCase(s, a, seed+uint64(i), duration, placement{docker: opt.Docker != nil, ext: opt.External})
			if err != nil {
				return Plan{}, err
			}
			c.Expect = predict(known, c)
			if runs > 1 {
				c.Name, c.Round = fmt.Sprintf("%s-r%d", a.Name, i+1), i+1
			}
			p.Cases = append(p.Cases, c)
		}
	}
	return p, nil
}

// predict is c's expectation knowing what the matrix's rules predict of
// c's approach under c's faults: a violation neither c's expectation nor
// a rule predicts contradicts (matrix.Expectations.Predict).
func predict(known matrix.Expectations, c Case) verdict.Expectation {
	var kinds []string
	for _, st := range c.Faults {
		if k := st.Fault.Kind(); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return known.Predict(c.Expect, c.Approach, kinds, c.Workload)
}

// workloadSpec is a scenario's workload as the runner runs it, for one run.
func workloadSpec(w workload.Spec, duration time.Duration, seed uint64) workload.Spec {
	w.Duration, w.Seed = duration, seed
	return w
}

// scenarioCase is one run of a scenario for approach a.
func scenarioCase(s *scenario.Scenario, a impls.Approach, seed uint64, duration time.Duration, where placement) (Case, error) {
	w := s.Workload
	c := Case{Name: a.Name, Approach: a, Record: true, Processes: s.Processes,
		Servers:  ServerOptions{Settings: s.Servers.Settings},
		Workload: workloadSpec(w, duration, seed)}
	for _, f := range s.Faults {
		c.Faults = append(c.Faults, f.Step)
	}
	// Clients connect straight to the servers unless a fault acts on
	// links: the proxies cost a round trip's worth of time each.
	c.Direct = !needsProxies(c.Faults)
	if e, ok := s.ExpectFor(a); ok {
		c.Expect = e
	} else if a.Safe && len(c.Faults) == 0 {
		c.Expect = verdict.Expect("declared safe, no faults", verdict.Safe)
	}
	if err := c.Validate(); err != nil {
		return Case{}, usageErr(err)
	}
	if err := checkAvailable(c, where); err != nil {
		return Case{}, usageErr(err)
	}
	return c, nil
}

// needsProxies reports whether a fault acts on network links (drop,
// slow, partition, or anything aimed at one client's links), which only
// the proxies can do. Server and client faults act on processes and
// clocks and need none.
func needsProxies(steps []chaos.Step) bool {
	for _, st := range steps {
		if st.Target.Kind() == chaos.TargetLink || chaos.NeedsOf(st.Fault).Links {
			return true
		}
	}
	return false
}

package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/internal/cputime"
	"github.com/locklab/locklab/metrics"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/stall"
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
	// linkBase is added to a client's slot to name its own proxies
	// (cluster.ClientEndpoints): cases side by side on one cluster each
	// have their own.
	linkBase int
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
	// lane are the nodes of a kind this environment's cases use, when
	// lanes side by side share them out; zero: all of every kind.
	lane laneNodes
	// lean: plot only the timelines of cases that showed a violation
	// (Plan.Lean).
	lean bool
	// endWhenAnswered: a case ends once its question is answered
	// (Plan.EndWhenAnswered, answer.go).
	endWhenAnswered bool
	// keepEvents: each case's outcome carries its events (Session).
	keepEvents bool
	// stall is the stall monitor's probe (nil: none); lab holds what the
	// probes of locklab and of the containers reported.
	stall *stall.Probe
	lab   *labStalls
}

// nodesOf is the nodes of kind b that this environment's cases use.
func (e *caseEnv) nodesOf(b impls.Server) []*cluster.Node {
	ns := e.servers.NodesOf(b)
	if b != e.lane.kind || e.lane.idx == nil {
		return ns
	}
	return pick(ns, e.lane.idx)
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
// of its own lane only. Another kind's servers, or another lane's nodes, are not this case's business: a fault there (a failover lane's
// primary down for half a minute) would only hold it up, or fail it.
func (e *caseEnv) healthy(ctx context.Context, b impls.Server) error {
	if e.servers == nil {
		return e.cluster.Healthy(ctx, e.healthTimeout)
	}
	return cluster.NodesHealthy(ctx, e.healthTimeout, e.nodesOf(b))
}

// narrow keeps the servers of its lane's kind this environment's cases use.
func (e *caseEnv) narrow(ep impls.Endpoints) impls.Endpoints {
	if e.lane.idx != nil {
		ep[e.lane.kind] = ep[e.lane.kind].Pick(e.lane.idx)
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
	check   checker.Verdict
	events  []history.Event // with caseEnv.keepEvents
	// cited are the indices of the events its violations name: the
	// lines its history page shows.
	cited []int64
}

// defaultHealthTimeout bounds how long a case waits for its servers to be
// healthy, before it starts and after its faults are healed.
const defaultHealthTimeout = 30 * time.Second

// runCase runs one case through its numbered steps (the methods of
// caseRun below, each named for its step):
//  1. the servers the case uses are healthy (else an infrastructure error);
//  2. the fleet starts: one lock client per workload client, goroutines or
//     worker processes, each through its own proxies when a fault may cut
//     one client's links;
//  3. the workload and the chaos engine run together, both recording into
//     the run's history; every event also feeds the case's checker and the
//     live view of who holds what (for "the holder of k" targets);
//  4. at the end of the duration: every fault still injected is healed,
//     and the servers must be healthy again (else the case says so, and
//     the session starts servers anew for the cases after it);
//  5. the fleet closes (held locks were released by the workload; a
//     crashed or retired client's lock is left to the server);
//  6. the checker decides: the same code as `locklab check`;
//  7. the verdict: what the case showed against what it was expected to;
//  8. the case's artifacts: its timeline with the fault windows.
func runCase(ctx context.Context, env *caseEnv, c Case) (caseOutcome, error) {
	plan, err := compileFaults(c)
	if err != nil {
		return caseOutcome{}, usageErr(err)
	}
	r := &caseRun{env: env, c: c, plan: plan}
	if err := r.healthyBefore(ctx); err != nil {
		return caseOutcome{}, err
	}
	if err := r.startFleet(ctx); err != nil {
		return caseOutcome{}, err
	}
	defer r.closeFleet()
	if err := r.runWorkloadAndFaults(ctx); err != nil {
		return caseOutcome{}, err
	}
	if err := r.healthyAfter(ctx); err != nil {
		return caseOutcome{}, err
	}
	r.measure(ctx)
	if err := r.check(ctx); err != nil {
		return r.out, err
	}
	r.judge(ctx)
	r.artifacts()
	return r.out, nil
}

// caseRun is one case on its way through runCase's steps.
type caseRun struct {
	env  *caseEnv
	c    Case
	plan []chaos.Planned
	// Set by startFleet.
	spec     workload.Spec
	ownLinks bool // a fault cuts one client's links: clients get proxies of their own
	hold     *holders
	rec      *checkingRecorder
	prog     *workload.Progress
	clients  fleet.Fleet
	// Set by runWorkloadAndFaults.
	nem       *nemesisRecorder
	stats     workload.Stats
	cpu       *report.CPUUse
	engineErr error
	// answeredEarly: the case ended before its duration, its question
	// answered (watchAnswer).
	answeredEarly atomic.Bool
	// Set by healthyAfter: the servers' health check after the faults
	// failed.
	unrecovered error
	// Set by measure and check.
	out         caseOutcome
	first, last int64 // the history's span
	windows     []report.Window
	stalls      []verdict.Stall // the lab's, during the case
	verdict     checker.Verdict
}

// healthyBefore is step 1.
func (r *caseRun) healthyBefore(ctx context.Context) error {
	if r.env.cluster == nil {
		return nil
	}
	if err := r.env.healthy(ctx, r.c.Approach.Server); err != nil {
		return infraErr(fmt.Errorf("%s: before the case: %w", r.c.Name, err))
	}
	return nil
}

// startFleet is step 2.
func (r *caseRun) startFleet(ctx context.Context) error {
	env, c := r.env, r.c
	for _, st := range c.Faults {
		r.ownLinks = r.ownLinks || st.Target.Kind() == chaos.TargetLink
	}
	r.hold = newHolders()
	r.rec = &checkingRecorder{w: history.Discard{}, observe: r.hold.see, locks: metrics.NewLocks(), keep: env.keepEvents}
	if c.Record {
		r.rec.w = env.history
		r.rec.check = checker.New(checker.ModelLease, true) // locklab's locks are leases
	}
	r.prog = &workload.Progress{}
	r.spec = c.Workload
	r.spec.KeyPrefix = fmt.Sprintf("%s/%s/", env.nonce, c.Name)
	r.spec.ProcBase = env.procBase
	r.spec.Store = workload.NewStore(r.rec, env.mono, r.spec.Fenced, 1_000_000)
	if err := r.spec.Validate(); err != nil {
		return usageErr(err)
	}
	clients, err := fleet.New(ctx, fleet.Config{Approach: c.Approach, Workload: r.spec, Processes: c.Processes,
		Endpoints: r.endpoints, Bind: r.hold.bind, Recorder: r.rec, Mono: env.mono, Progress: r.prog,
		WorkerArgv: env.workerArgv, Dir: env.dir, Stall: env.stall, ProcessClocks: c.movesClientClocks()})
	if err != nil {
		return infraErr(err)
	}
	r.clients = clients
	return nil
}

// endpoints are what client slot connects to: straight to the servers
// (Direct), through its own proxies (ownLinks), or through the shared ones.
func (r *caseRun) endpoints(slot int) (impls.Endpoints, error) {
	env := r.env
	switch {
	case env.servers == nil:
		return impls.Endpoints{}, nil
	case r.c.Direct:
		return env.narrow(env.servers.DirectEndpoints()), nil
	case r.ownLinks:
		ep, err := env.servers.ClientEndpoints(env.linkBase + slot)
		return env.narrow(ep), err
	}
	return env.narrow(env.servers.Endpoints()), nil
}

// runWorkloadAndFaults is step 3, and the heal of step 4: faults act
// during the duration; at its end (or on Ctrl-C) every one still in place
// is healed while the clients drain.
func (r *caseRun) runWorkloadAndFaults(ctx context.Context) error {
	env := r.env
	r.nem = &nemesisRecorder{rec: r.rec, clk: env.mono, idBase: int64(env.procBase) * 1000}
	var engine *chaos.Engine
	if len(r.plan) > 0 {
		res := &resolver{cl: env.servers, linkBase: env.linkBase, nodesOf: env.nodesOf, server: r.c.Approach.Server, keyPrefix: r.spec.KeyPrefix,
			slots: r.clients.Slots(), holders: r.hold, ownLinks: r.ownLinks}
		engine = chaos.NewEngine(res, r.nem, holdingWaiter{holders: r.hold, key: res.keyName, now: env.mono.Nanos})
	}
	stopProgress := env.reportProgress(r.c, r.prog)
	defer stopProgress()
	start := time.Now()
	// A fleet that fails (a broken adapter) ends the faults early: the
	// case is over, and what was injected is healed.
	faultsCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	ectx, endFaults := context.WithDeadline(faultsCtx, start.Add(r.spec.Duration))
	defer endFaults()
	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		if engine == nil {
			return
		}
		runErr := engine.Run(ectx, start, r.plan)
		// Run returns once every planned injection has fired; faults
		// without a `for` stay until the end of the duration (or until
		// the case answered its question: endFaults).
		<-ectx.Done()
		r.engineErr = errors.Join(runErr, engine.HealAll(ctx))
	}()
	clientsDone := make(chan struct{})
	defer close(clientsDone)
	if rule, ok := newAnswerRule(r.c, r.plan); ok && (env.endWhenAnswered || r.c.EndWhenAnswered) {
		go r.watchAnswer(ctx, rule, engine, endFaults, engineDone, clientsDone)
	}
	// The clients start once the faults due at the start are in place: a
	// partition "from 0 s" is there before the first request.
	if engine != nil {
		select {
		case <-engine.Opened():
		case <-ctx.Done():
		}
	}
	cpu := r.startCPU()
	stats, err := r.clients.Run(ctx)
	r.cpu = cpu()
	if err != nil {
		stopFaults()
	}
	<-engineDone
	if err != nil {
		return infraErr(err)
	}
	r.stats = stats
	env.procBase += stats.Procs
	return nil
}

// startCPU notes the processor time locklab and the case's local servers
// have used; the function it returns gives what they used since (nil when
// locklab's own could not be read).
func (r *caseRun) startCPU() func() *report.CPUUse {
	var nodes []*cluster.Node
	if r.env.servers != nil {
		nodes = r.env.nodesOf(r.c.Approach.Server)
	}
	servers := func() (time.Duration, bool) {
		var sum time.Duration
		local := false
		for _, n := range nodes {
			if pids := n.LocalProcesses(); len(pids) > 0 {
				sum += cputime.Processes(pids)
				local = true
			}
		}
		return sum, local
	}
	self0, err := cputime.Self()
	srv0, _ := servers()
	return func() *report.CPUUse {
		self, err2 := cputime.Self()
		if err != nil || err2 != nil {
			return nil
		}
		use := &report.CPUUse{Locklab: (self - self0).Seconds()}
		if srv, local := servers(); local {
			s := max(srv-srv0, 0).Seconds()
			use.Servers = &s
		}
		return use
	}
}

// healthyAfter is step 4: a case whose servers did not recover says so.
// That is a finding about the servers (ZooKeeper's ensemble not back
// after three overlapping server faults), not the end of the run: the
// case is still checked and judged.
func (r *caseRun) healthyAfter(ctx context.Context) error {
	if r.env.cluster != nil && ctx.Err() == nil {
		if err := r.env.healthy(ctx, r.c.Approach.Server); err != nil && ctx.Err() == nil {
			r.unrecovered = err
			r.env.logf("warning: %s: servers did not recover after the faults: %v", r.c.Name, err)
		}
	}
	if errors.Is(r.engineErr, cluster.ErrFaultCommand) {
		// The user's command did not do what the history says was
		// injected: nothing observed is an observation of that fault.
		return infraErr(fmt.Errorf("%s: %w", r.c.Name, r.engineErr))
	}
	if r.engineErr != nil {
		r.env.logf("warning: %s: faults: %v", r.c.Name, r.engineErr)
	}
	return nil
}

// closeFleet is step 5, deferred: the clients live until the case's
// outcome is written.
func (r *caseRun) closeFleet() { r.clients.Close() }

// measure sums up what the clients did, and when the faults were.
func (r *caseRun) measure(ctx context.Context) {
	st, c := r.stats, r.c
	locks := r.rec.lockMetrics()
	r.out = caseOutcome{stats: st, handOff: locks.HandOff(), run: report.Run{
		Case: c.Name, Approach: c.Approach.Name, Clients: c.Workload.Clients, Seconds: st.Elapsed.Seconds(), Answered: r.answeredEarly.Load(),
		Acquired: st.Acquired, AcquiresPerSec: float64(st.Acquired) / st.Elapsed.Seconds(),
		NotAcquired: st.NotAcquired, Indeterminate: st.Indeterminate, Errors: st.Errors,
		FirstError: st.FirstError, ReleaseNotHeld: st.ReleaseNotHeld, Renewals: st.Renewals, Reentries: st.Reentries,
		Lost: st.Lost, Replaced: st.Replaced, Crashed: st.Crashed, Late: st.Late,
		Acquire: report.Summarise(st.Acquire), Release: report.Summarise(st.Release),
		Complete: ctx.Err() == nil, Linearizable: checker.LinNotChecked, ViaProxy: !c.Direct && r.env.servers != nil,
		HandOff: report.Summarise(locks.HandOff()), Fairness: locks.Fairness(),
	}}
	if r.unrecovered != nil {
		r.out.run.Unrecovered = r.unrecovered.Error()
	}
	r.out.run.CPU = r.cpu
	r.first, r.last = r.rec.span()
	r.windows, r.out.run.Faults = r.nem.windows(r.first, r.last)
	r.rec.mu.Lock()
	r.out.events = r.rec.events
	r.rec.mu.Unlock()
	r.stalls = r.stallsOf()
	addStalls(&r.out.run, r.stalls, r.first)
}

// check is step 6. The verdict is computed even after Ctrl-C: what ran is
// still judged.
func (r *caseRun) check(ctx context.Context) error {
	if r.rec.check == nil {
		return nil
	}
	v, err := r.rec.check.Verdict(context.WithoutCancel(ctx), checker.Options{
		TimeLimit: 10 * time.Second, HTMLDir: filepath.Join(r.env.dir, "linearizability")})
	if err != nil {
		return infraErr(fmt.Errorf("%s: check: %w", r.c.Name, err))
	}
	r.verdict = v
	r.out.check = v
	r.out.run.AddVerdict(v, r.env.dir, report.Limits{Violations: 10})
	return nil
}

// judge is step 7: expected versus observed. "Blocked": after the last
// fault took effect, clients kept asking and nobody was granted the lock
// again; or a key stayed stuck well past when it should have come free
// (verdict.Starvation, explore's judgement too).
func (r *caseRun) judge(ctx context.Context) {
	st, run := r.stats, &r.out.run
	// A grant counts once it is in the history: a worker killed before it
	// sent its counts took its Acquired with it (TestClientCrashFrees...
	// read "no client was ever granted the lock" so, under load).
	live := verdict.Liveness{Unavailable: st.Unavailable, NothingGranted: st.Acquired == 0 && !r.rec.granted()}
	if r.nem.last != 0 && (r.rec.blockedSince(r.nem.last) || !r.rec.grantedSince(r.nem.last) && st.Errors > 0) {
		live.Blocked = true
	}
	if r.rec.starved(verdict.FreeingOf(r.c.Approach, r.spec.TTL)) {
		live.Blocked = true
	}
	live.Unrecovered = r.unrecovered != nil
	obs := verdict.Observe(r.verdict, r.rec.check != nil, live)
	res := verdict.Compare(r.c.Expect, obs)
	d := r.decisive()
	res = verdict.LabStalled(res, r.c.Expect, d, notRestarting(r.stalls, r.windows))
	if h, ok := verdict.LapsedUntaken(d.Tenures, d.AtHold); ok {
		res = verdict.Untaken(res, h, r.first)
	}
	if len(r.plan) > 0 && !r.nem.asked() {
		res = verdict.NotInjected(res, injectionErrors(run.Faults))
	}
	if at := r.nem.lastStepFirst(); at != 0 && !r.rec.grantedSince(at) {
		res = verdict.NoGrantAfterFault(res)
	}
	if r.unrecovered != nil {
		res = verdict.ServersUnrecovered(res, r.c.Expect, r.unrecovered.Error())
	}
	if ctx.Err() != nil {
		res = cutShort(res)
	}
	r.out.verdict = res
	run.Expected = r.c.Expect.Names()
	run.Observed = outcomeNames(res.Observed)
	run.Missing = outcomeNames(res.Missing)
	run.FirstViolationAt = r.firstViolationAt()
	run.Status, run.Missed, run.LabStalled = res.Status, res.Missed, res.LabStalled
	run.Explanation = res.Text
	if r.rec.check != nil {
		run.Deciding, run.Incidents = report.IncidentLines(report.Incidents(r.verdict, r.rec.at, r.last), res.Deciding(), run.Faults, r.first, 10)
	}
}

// injectionErrors says why the case's faults were not injected: the
// first injection's error, and how many failed.
func injectionErrors(faults []report.Fault) string {
	var errs []string
	for _, f := range faults {
		if f.Error != "" {
			errs = append(errs, f.Error)
		}
	}
	cut := len(faults) - len(errs)
	switch {
	case len(errs) == 0 && cut == 0:
		return "no injection was due before the case ended"
	case len(errs) == 0:
		return "each injection was cut short by the end of the case"
	case cut > 0:
		return fmt.Sprintf("%s; the others were cut short by the end of the case", errs[0])
	case len(errs) == 1:
		return errs[0]
	}
	return fmt.Sprintf("%s; %d injections failed in all", errs[0], len(errs))
}

// firstViolationAt is how long after the first fault (or the start) the
// first double grant began; -1: none. A violation before the fault (an
// approach racy without it) was caught by the time the fault came: 0, not
// a negative time that could read as "none".
func (r *caseRun) firstViolationAt() float64 {
	grants := r.verdict.DoubleGrants
	if len(grants) == 0 {
		return -1
	}
	from := r.first
	if r.nem.first != 0 {
		from = r.nem.first
	}
	at := grants[0].Second.Start
	for _, d := range grants {
		at = min(at, d.Second.Start)
	}
	return max(0, time.Duration(at-from).Seconds())
}

// artifacts is step 8: the case's timeline (a PNG, and its page: the
// verdict, then the timeline to zoom and hover) and, with faults, its
// latency over time, both with the fault windows shaded.
func (r *caseRun) artifacts() {
	if r.rec.check == nil || (r.env.lean && r.verdict.Safe()) {
		return
	}
	c := r.c
	procs := make([]int, c.Workload.Clients)
	for i := range procs {
		procs[i] = r.spec.ProcBase + i
	}
	tl := &report.Timeline{
		Title:  fmt.Sprintf("%s, %d clients: who held the lock when", c.Approach.Name, c.Workload.Clients),
		Origin: r.first, End: r.last, Intervals: r.rec.check.Intervals(), Grants: r.verdict.DoubleGrants, Faults: r.windows,
		Stalls: stallWindows(r.stalls), Slot: r.hold.slotOf, Procs: procs,
		Violations: r.verdict.Violations, Event: r.rec.eventAt, HistoryFile: history.FileName}
	png := fmt.Sprintf("timeline-%s.png", c.Name)
	links := []string{png, history.FileName, "index.html"}
	for _, v := range r.verdict.Violations {
		r.out.cited = append(r.out.cited, v.Events...)
	}
	if len(r.out.cited) > 0 {
		tl.History = historyPage(c.Name) // the session writes it once the history is closed
		links = append([]string{tl.History}, links...)
	}
	r.plot(png, func(path string) error { return report.PlotTimeline(path, tl) })
	r.plot(timelinePage(c.Name), func(path string) error {
		return report.WriteTimelinePage(path, report.CasePage(r.out.run, tl, links))
	})
	if len(c.Faults) > 0 && !r.env.lean {
		r.plot(fmt.Sprintf("latency-over-time-%s.png", c.Name), func(path string) error {
			return report.PlotLatencyOverTime(path, &report.LatencyOverTime{
				Title:  fmt.Sprintf("%s: acquire latency over time, faults shaded", c.Approach.Name),
				Origin: r.first, End: r.last, Points: r.rec.latencies, Faults: r.windows})
		})
	}
}

// timelinePage is a case's page: its verdict, then its timeline.
func timelinePage(name string) string { return "timeline-" + name + ".html" }

// historyPage is the page of a case's history lines that its violations cite.
func historyPage(name string) string { return "history-" + name + ".html" }

// plot draws one artifact; a plot that fails is a warning, not a failed case.
func (r *caseRun) plot(name string, draw func(path string) error) {
	if err := draw(filepath.Join(r.env.dir, name)); err != nil {
		r.env.logf("warning: %v", err)
		return
	}
	r.out.run.Artifacts = append(r.out.run.Artifacts, name)
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

package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
)

// session is one plan being run: its results folder and results, its
// servers, its history, and the cases finished so far.
type session struct {
	r   *Runner
	p   Plan
	ext *cluster.ExternalConfig
	dir string
	res *report.Results
	out *Outcome
	// The servers: only those the plan's approaches use, started when the
	// first case needs them and again when a case asks for other server
	// options (a persistence mode).
	kinds      []impls.Server
	servers    *cluster.Cluster
	serversFor ServerOptions
	// stopServerWatch stops the watch on the servers' waits for a CPU.
	stopServerWatch func()
	// In parallel, the approaches of a kind whose nodes make lanes get
	// nodes of their own, started beside the shared ones: one each for
	// those that use one node, a second lane of as many for the others.
	layouts  layouts
	hfile    *history.Writer // nil: no case records its history
	faultLog *lazyFile       // fault-commands.log; nil: the servers take no fault commands
	base     caseEnv         // what every case's environment starts from
	atOnce   int             // how many cases run at once: MaxCases in parallel, else 1
	mu       sync.Mutex      // guards res, out, hists, cited and step between lanes
	hists    map[string][3]*hdrhistogram.Histogram
	step     int // cases begun so far (their servers were up)
	nextProc int // the first process id of the next case run one after the other
	// cited are the history lines each case's violations name (by case).
	cited map[string][]int64
}

func newSession(r *Runner, p Plan, ext *cluster.ExternalConfig) (*session, error) {
	runID := time.Now().UTC().Format("20060102-150405") + "-" + randHex(2)
	dir := filepath.Join(p.ResultsDir, runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		// A file where the folder goes, or one the user may not write,
		// is the user's to fix: bad usage, not the lab's failure.
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrPermission) {
			return nil, usageErr(fmt.Errorf("--results %s: %w (want a folder locklab may write in)", p.ResultsDir, err))
		}
		return nil, infraErr(fmt.Errorf("results dir: %w", err))
	}
	res := &report.Results{
		RunID: runID, StartedAt: time.Now().UTC(), Config: p.Config,
		Versions: map[string]string{"locklab": version(), "go": runtime.Version()},
		Host:     report.Host{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH},
		Verdict:  report.Verdict{Safe: true}, Runs: []report.Run{},
	}
	s := &session{r: r, p: p, ext: ext, dir: dir, res: res, out: &Outcome{Dir: dir, Results: res},
		kinds: p.servers(), hists: map[string][3]*hdrhistogram.Histogram{}}
	if ext != nil && ext.HasFaultCommands() {
		s.faultLog = &lazyFile{path: filepath.Join(dir, faultLogName)}
	}
	maxCases := r.MaxCases
	if maxCases <= 0 {
		maxCases = DefaultMaxCases()
	}
	s.layouts = p.layouts(r.Parallel, maxCases)
	s.atOnce = 1
	if r.Parallel {
		s.atOnce = maxCases
	}
	s.base = caseEnv{history: history.Discard{}, mono: clock.NewMonotonic(), dir: dir, nonce: randHex(2),
		steps: len(p.Cases), progress: r.Progress, logf: r.logf, workerArgv: r.WorkerArgv, healthTimeout: r.HealthTimeout,
		lean: p.Lean, endWhenAnswered: p.EndWhenAnswered, stall: p.stallProbe()}
	if s.base.stall != nil {
		res.StallThreshold = s.base.stall.Threshold.Seconds()
	}
	if s.base.healthTimeout <= 0 {
		s.base.healthTimeout = defaultHealthTimeout
	}
	return s, nil
}

// save writes results.json as it stands.
func (s *session) save() error { return report.WriteJSON(filepath.Join(s.dir, "results.json"), s.res) }

// openHistory starts the history (history.jsonl.zst) when a case records its history.
func (s *session) openHistory() error {
	if !anyRecorded(s.p) {
		return nil
	}
	w, err := history.Create(filepath.Join(s.dir, history.FileName))
	if err != nil {
		return infraErr(err)
	}
	s.base.history, s.hfile = w, w
	return nil
}

// ensureServers has the servers c asks for running, starting them (again)
// when it asks for other options than those running.
func (s *session) ensureServers(ctx context.Context, c Case) error {
	if len(s.kinds) == 0 || (s.servers != nil && s.serversFor == c.ServerOptions()) {
		return nil
	}
	s.closeServers()
	started := time.Now()
	cfg := localConfig(s.kinds, c.ServerOptions())
	for kind, l := range s.layouts {
		if cfg.Nodes[kind] > 0 {
			cfg.Nodes[kind] += l.extra()
			if k, _ := cluster.KindOf(kind); k.Ensembles {
				cfg.Ensembles[kind] = 1 + l.second
			}
		}
	}
	cl, err := startCluster(ctx, s.ext, s.p.Docker, cfg)
	if err != nil {
		return err
	}
	s.servers, s.serversFor = cl, c.ServerOptions()
	if s.faultLog != nil {
		cl.SetFaultLog(s.faultLog)
	}
	s.r.logf("cluster ready in %.2fs: %d nodes", time.Since(started).Seconds(), len(cl.Nodes()))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchContainers(ctx)
	s.stopServerWatch = s.watchServers(ctx, cl)
	for kind, v := range cl.Versions {
		s.res.Versions[string(kind)] = v
	}
	s.res.Servers = map[string][]string{}
	for kind, addrs := range cl.Addresses() {
		s.res.Servers[string(kind)] = addrs
	}
	return nil
}

func (s *session) closeServers() {
	if s.stopServerWatch != nil {
		s.stopServerWatch()
		s.stopServerWatch = nil
	}
	if s.servers != nil {
		s.servers.Close()
		s.servers = nil
	}
}

// faultLogName is the file of a run's fault commands and what they said.
const faultLogName = "fault-commands.log"

// closeFaultLog closes fault-commands.log, once the servers are closed
// (their last heals write to it).
func (s *session) closeFaultLog() {
	if s.faultLog != nil {
		s.faultLog.Close()
	}
}

// lazyFile is a file created at its first write: a run whose fault
// commands never ran has no log of them.
type lazyFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// created says whether the file was written (nil: there is none).
func (l *lazyFile) created() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f != nil
}

func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// record keeps one finished case, in the order cases finish.
func (s *session) record(c Case, co caseOutcome) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Runs = append(s.res.Runs, co.run)
	s.out.Verdicts = append(s.out.Verdicts, co.verdict)
	tally(&s.res.Verdict, co)
	if len(co.cited) > 0 {
		if s.cited == nil {
			s.cited = map[string][]int64{}
		}
		s.cited[c.Name] = co.cited
	}
	if !s.p.Lean {
		s.hists[c.Name] = [3]*hdrhistogram.Histogram{co.stats.Acquire, co.stats.Release, co.handOff}
	}
	if err := s.save(); err != nil {
		return infraErr(err)
	}
	return nil
}

// errOtherLane ends the context of the cases running when one failed.
var errOtherLane = errors.New("another lane failed")

// caseLinks is how many client ids (cluster.ClientEndpoints) each of the
// cases at once reserves for its own proxies.
const caseLinks = 10_000

// runCases runs cases and keeps each in the results, telling keep (nil:
// nobody) of each by its index in cases, from the case's goroutine. Cases
// that ask for the same server options run together, on servers started
// for them, groups in order of first appearance (runGroup). After a case
// whose servers did not recover, no case starts on them: they are stopped,
// and the cases still to run get servers started anew. The first case to
// fail stops the others and is the error; once ctx ends, no case starts.
func (s *session) runCases(ctx context.Context, cases []Case, keep func(i int, co caseOutcome)) error {
	for _, idx := range indicesByServers(cases) {
		for len(idx) > 0 {
			if ctx.Err() != nil {
				return nil
			}
			if err := s.ensureServers(ctx, cases[idx[0]]); err != nil {
				return err
			}
			group := idx
			broken, rest, err := s.runGroup(ctx, pick(cases, group), func(i int, co caseOutcome) {
				if keep != nil {
					keep(group[i], co)
				}
			})
			if err != nil {
				return err
			}
			if broken != "" {
				if err := s.dropServers(broken, len(rest)); err != nil {
					return err
				}
			}
			idx = nil
			for _, i := range rest {
				idx = append(idx, group[i])
			}
		}
	}
	return nil
}

// dropServers stops servers that did not recover after case broken's
// faults, so that the next case starts servers anew; servers locklab did
// not start cannot be, and more cases to run on them (waiting) is an
// infrastructure error.
func (s *session) dropServers(broken string, waiting int) error {
	if s.ext != nil {
		if waiting > 0 {
			return infraErr(fmt.Errorf("%s: servers did not recover after the faults, and they are not locklab's to start anew (%d cases not run)", broken, waiting))
		}
		return nil
	}
	s.r.logf("%s: servers did not recover after the faults; starting them anew for the next cases", broken)
	s.closeServers()
	return nil
}

// runGroup runs a group's cases on the servers running now: the scheduler
// (lanes.go) starts each case on a lane when one is free for it and fewer
// than atOnce run; one at a time, in the order given, when the runner is
// not Parallel. The first case to fail cuts the others short. Once a case
// ends with its servers unrecovered (broken names it), no other starts:
// those running end as they will, and rest are the ones never started.
func (s *session) runGroup(ctx context.Context, group []Case, keep func(i int, co caseOutcome)) (broken string, rest []int, err error) {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sched := newScheduler(group, s.p.ShareServers, s.layouts)
	waiting := s.startOrder(group)
	type ended struct {
		i, lane, slot int
		env           *caseEnv
		unrecovered   bool
		err           error
	}
	ends := make(chan ended)
	free := make([]int, s.atOnce) // the slots of cases at once not in use
	for i := range free {
		free[i] = len(free) - 1 - i
	}
	var firstErr error
	for running := 0; ; running-- {
		if lctx.Err() == nil && broken == "" {
			waiting = sched.pass(waiting, len(free), func(i, li int) {
				slot := free[len(free)-1]
				free = free[:len(free)-1]
				running++
				env := s.envOf(slot, sched.lanes[li].nodes)
				go func() {
					unrecovered, err := s.runOne(lctx, env, group[i], func(co caseOutcome) { keep(i, co) })
					ends <- ended{i: i, lane: li, slot: slot, env: env, unrecovered: unrecovered, err: err}
				}()
			})
		}
		if running == 0 {
			break
		}
		e := <-ends
		sched.leave(e.i, e.lane)
		free = append(free, e.slot)
		s.nextProc = e.env.procBase // one after the other, a case numbers its processes on from the last's
		if e.err != nil && firstErr == nil && !errors.Is(e.err, context.Canceled) {
			firstErr = e.err
			cancel(errOtherLane)
		}
		if e.unrecovered && broken == "" {
			broken = group[e.i].Name
		}
	}
	if broken == "" {
		waiting = nil
	}
	return broken, waiting, firstErr
}

// startOrder is the order in which a group's cases wait to start: side by
// side, caseOrder's; one after the other, the order given.
func (s *session) startOrder(group []Case) []int {
	if s.r.Parallel {
		return caseOrder(group, func(c Case) time.Duration { return expectedLength(c, s.p.EndWhenAnswered) })
	}
	order := make([]int, len(group))
	for i := range order {
		order[i] = i
	}
	return order
}

// envOf is the environment of the next case to start, on slot of those at
// once and on lane. Cases side by side each number their processes in a
// range of their own (they all write one history) and reach their servers
// through client proxies of their slot's; one after the other, a case
// numbers them on from the last and uses the first proxies.
func (s *session) envOf(slot int, lane laneNodes) *caseEnv {
	env := s.base
	env.useServers(s.servers)
	env.lane = lane
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step++
	env.step = s.step
	if env.steps == 0 { // a session's cases to come are not known
		env.steps = s.step
	}
	if s.r.Parallel {
		env.linkBase, env.procBase = (slot+1)*caseLinks, s.step*laneProcs
	} else {
		env.procBase = s.nextProc
	}
	return &env
}

// runOne runs case c and keeps it in the results, unless another case
// failed: cut short, what it saw is not an observation of the case (a
// violation it was due to show would read as missed), and the run reports
// the other case's error.
// It reports whether the case's servers did not recover after its faults.
func (s *session) runOne(ctx context.Context, env *caseEnv, c Case, keep func(caseOutcome)) (unrecovered bool, err error) {
	co, err := runCase(ctx, env, c)
	if err != nil {
		return false, err
	}
	unrecovered = co.run.Unrecovered != ""
	if errors.Is(context.Cause(ctx), errOtherLane) {
		return unrecovered, nil
	}
	if err := s.record(c, co); err != nil {
		return unrecovered, err
	}
	keep(co)
	return unrecovered, nil
}

// end closes the history, writes the plan's artifacts and finishes. A run
// whose servers never came up leaves no folder.
func (s *session) end(ctx context.Context, runErr error) (*Outcome, error) {
	s.res.Runs, s.out.Verdicts = inPlanOrder(s.p.Cases, s.res.Runs, s.out.Verdicts)
	if s.hfile != nil {
		if err := s.hfile.Close(); err != nil && runErr == nil {
			runErr = infraErr(fmt.Errorf("history: %w", err))
		}
	}
	if runErr != nil && s.step == 0 && ctx.Err() == nil {
		// The servers never came up (an image missing, a server
		// unreachable): nothing was observed, and a folder holding only
		// the error would read as a run. The error says what happened.
		// (A Ctrl-C keeps its folder, marked incomplete, as it says.)
		if err := os.RemoveAll(s.dir); err != nil {
			return s.finish(ctx, runErr)
		}
		return nil, runErr
	}
	s.res.Artifacts = []string{"index.html", "results.json", "summary.md"}
	if s.hfile != nil {
		s.res.Artifacts = append(s.res.Artifacts, history.FileName)
	}
	if s.faultLog.created() {
		s.res.Artifacts = append(s.res.Artifacts, faultLogName)
	}
	if !s.p.Lean {
		s.res.Artifacts = append(s.res.Artifacts, writeArtifacts(s.dir, s.p, s.res.Runs, s.hists, s.r.logf)...)
	}
	s.writeHistoryPages()
	for _, run := range s.res.Runs {
		s.res.Artifacts = append(s.res.Artifacts, run.Artifacts...)
	}
	return s.finish(ctx, runErr)
}

// writeHistoryPages writes each case's page of the history lines its
// violations cite, which its timeline page links to, once the history
// is closed. A page that cannot be written is a warning: the timeline
// still names each line.
func (s *session) writeHistoryPages() {
	if s.hfile == nil || len(s.cited) == 0 {
		return
	}
	var pages []report.HistoryPage
	var runs []int
	for i, run := range s.res.Runs {
		if cited, ok := s.cited[run.Case]; ok {
			pages = append(pages, report.HistoryPage{Name: historyPage(run.Case), Case: run.Case,
				Timeline: timelinePage(run.Case), Cited: cited})
			runs = append(runs, i)
		}
	}
	if err := report.WriteHistoryPages(s.dir, history.FileName, pages); err != nil {
		s.r.logf("warning: %v", err)
		return
	}
	for _, i := range runs {
		s.res.Runs[i].Artifacts = append(s.res.Runs[i].Artifacts, historyPage(s.res.Runs[i].Case))
	}
}

// finish notes how the run ended and writes summary.md, index.html and
// results.json.
func (s *session) finish(ctx context.Context, runErr error) (*Outcome, error) {
	res := s.res
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
	if err := writeSummary(filepath.Join(s.dir, "summary.md"), s.p.Kind, res); err != nil && runErr == nil {
		runErr = infraErr(err)
	}
	if err := report.WriteIndex(s.dir, s.p.Kind, res); err != nil && runErr == nil {
		runErr = infraErr(err)
	}
	if err := s.save(); err != nil && runErr == nil {
		runErr = infraErr(err)
	}
	return s.out, runErr
}

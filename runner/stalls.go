package runner

import (
	"context"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/verdict"
)

// The lab watches itself: a probe in locklab (for the whole run), one in
// every worker process (fleet), and with servers in containers one in a
// container beside them. Each stall they report is a `stall` event in the
// history; a case counts those during it, shades them on its timeline,
// and its verdict is undecided when they fell on the events that decide
// it (verdict.LabStalled).

// stallProbe is the probe a plan's stall monitor runs (nil: none).
func (p Plan) stallProbe() *stall.Probe {
	if p.StallThreshold < 0 {
		return nil
	}
	probe := &stall.Probe{Threshold: p.StallThreshold}
	if probe.Threshold == 0 {
		probe.Threshold = stall.DefaultThreshold
	}
	return probe
}

// labStalls are the stalls of what every case shares (locklab itself, the
// server containers), as the probes report them: each is recorded into
// the run's history and kept for the cases it overlaps. A worker's stalls
// belong to its case alone (checkingRecorder keeps them).
type labStalls struct {
	rec history.Recorder
	mu  sync.Mutex
	all []verdict.Stall
}

func (l *labStalls) add(who string, s stall.Span) {
	l.rec.Record(history.StallEvent(who, s.Start, s.End))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, labStall(who, s.Start, s.End))
}

// labStall is who's stall from start to end as the verdict reads it: a
// worker's is its client's own.
func labStall(who string, start, end int64) verdict.Stall {
	proc, ok := history.StallClient(who)
	if !ok {
		proc = -1
	}
	return verdict.Stall{Who: who, Proc: proc, Span: verdict.Span{Start: start, End: end}}
}

// during are the stalls that overlap [from, to].
func (l *labStalls) during(from, to int64) []verdict.Stall {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []verdict.Stall
	for _, s := range l.all {
		if s.Start <= to && s.End >= from {
			out = append(out, s)
		}
	}
	return out
}

// watchStalls runs locklab's own probe until the returned stop is called.
func (s *session) watchStalls(ctx context.Context) (stop func()) {
	probe := s.base.stall
	if probe == nil {
		return func() {}
	}
	s.base.lab = &labStalls{rec: s.base.history}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		report, drain := stall.Detached(func(sp stall.Span) { s.base.lab.add("locklab", sp) })
		defer drain()
		probe.Run(ctx, s.base.mono.Nanos, report)
	}()
	return func() { cancel(); <-done }
}

// watchContainers runs the probe in a container beside the servers (Docker
// mode), its stalls recorded as the containers'. A probe that cannot start
// is a warning: the run goes on watching locklab and its workers.
func (s *session) watchContainers(ctx context.Context) {
	probe := s.base.stall
	if probe == nil || s.p.Docker == nil || s.servers == nil {
		return
	}
	argv := s.r.ProbeArgv
	if argv == nil {
		exe, err := os.Executable()
		if err != nil {
			s.r.logf("warning: no stall probe beside the containers: %v", err)
			return
		}
		argv = []string{exe, "probe"}
	}
	argv = append(slices.Clip(argv), "--period", stall.DefaultPeriod.String(), "--threshold", probe.Threshold.String())
	lab := s.base.lab
	err := s.servers.RunProbe(ctx, argv, func(out io.Reader) {
		_ = stall.Read(out, func(sp stall.Span) { lab.add("containers", sp) })
	})
	if err != nil {
		s.r.logf("warning: no stall probe beside the containers: %v", err)
	}
}

// watchServers watches the servers locklab runs on this machine for their
// threads' waits for a CPU (stall.Runqueue) until stop is called: a
// starved server answers late, and a lease it keeps may run out meanwhile,
// as in a stall of the lab's own. Each is recorded as the server's
// ("server redis-0"). Containers have their probe (watchContainers).
func (s *session) watchServers(ctx context.Context, cl *cluster.Cluster) (stop func()) {
	probe, lab := s.base.stall, s.base.lab
	if probe == nil || lab == nil || s.p.Docker != nil {
		return func() {}
	}
	nodes := cl.Nodes()
	list := func() map[string][]int {
		procs := map[string][]int{}
		for _, n := range nodes {
			if pids := n.LocalProcesses(); len(pids) > 0 {
				procs[serverStallWho(n.Name)] = pids
			}
		}
		return procs
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A server's processes are listed again each second: a restart
		// gives it a new pid, a connection a new PostgreSQL backend.
		stall.Runqueue{Threshold: probe.Threshold, ListEvery: time.Second}.Run(ctx, s.base.mono.Nanos, list, lab.add)
	}()
	return func() { cancel(); <-done }
}

// ownStalls are the lab's stalls that bear on a case whose servers'
// stalls are named in mine: every stall but another server's.
func ownStalls(lab []verdict.Stall, mine map[string]bool) []verdict.Stall {
	var out []verdict.Stall
	for _, s := range lab {
		if !strings.HasPrefix(s.Who, serverStallWho("")) || mine[s.Who] {
			out = append(out, s)
		}
	}
	return out
}

// notRestarting are the stalls that may decide a case's comparison: all
// but a server's waits for a CPU that began while a fault restarted that
// server. A process starting up on a busy machine waits its turn as it
// comes up and takes its clients back; that is the restart, the fault the
// case injects, not the lab standing still (under two busy loops they
// made 10 of 20 pg-advisory server-restart runs undecided).
func notRestarting(stalls []verdict.Stall, windows []report.Window) []verdict.Stall {
	var restarting []report.Window
	for _, w := range windows {
		if restarts(w.Label) {
			restarting = append(restarting, w)
		}
	}
	var out []verdict.Stall
	for _, s := range stalls {
		if !slices.ContainsFunc(restarting, func(w report.Window) bool {
			return s.Who == serverStallWho(w.Target) && s.Start >= w.Start && s.Start <= w.End
		}) {
			out = append(out, s)
		}
	}
	return out
}

// restarts reports whether the fault kind stops a server's processes and
// starts new ones, as its threat says (a restart, or a kill healed by a
// start).
func restarts(kind string) bool {
	f, err := chaos.New(kind)
	if err != nil {
		return false
	}
	t := f.Threat()
	return t == chaos.ThreatServerRestart || t == chaos.ThreatServerCrash
}

// serverStallWho is who a server node's stalls are.
func serverStallWho(node string) string { return "server " + node }

// stallsOf are a case's stalls: its workers', those of the lab during it
// and those of its own servers (not another lane's), in time order.
func (r *caseRun) stallsOf() []verdict.Stall {
	mine := map[string]bool{}
	if r.env.servers != nil && r.c.Approach.Server != "" {
		for _, n := range r.env.nodesOf(r.c.Approach.Server) {
			mine[serverStallWho(n.Name)] = true
		}
	}
	out := append(r.rec.stallsSeen(), ownStalls(r.env.lab.during(r.first, r.last), mine)...)
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// maxListedStalls bounds the stalls results.json lists per case (it counts
// them all).
const maxListedStalls = 20

// addStalls puts a case's stalls into its results.
func addStalls(run *report.Run, stalls []verdict.Stall, origin int64) {
	run.StallCount = len(stalls)
	for i, s := range stalls {
		d := time.Duration(s.End - s.Start).Seconds()
		run.LongestStall = max(run.LongestStall, d)
		if i < maxListedStalls {
			run.Stalls = append(run.Stalls, report.Stall{Who: s.Who, At: time.Duration(s.Start - origin).Seconds(), For: d})
		}
	}
}

// decisive places in time what decides the case's comparison: its
// violations, its fault windows, its span.
func (r *caseRun) decisive() verdict.Decisive {
	run := verdict.Span{Start: r.first, End: r.last}
	d := verdict.Decisive{Run: run, Violations: verdict.ViolationSpans(r.verdict, r.rec.at, run)}
	d.Lease = leaseOf(r.c.Approach, r.c.Workload.TTL, run)
	d.Settle = int64(stall.DefaultThreshold)
	if r.env.stall != nil {
		d.Settle = int64(r.env.stall.Threshold)
	}
	// The holds, as long as their holders held on: a crash ends a tenure
	// under the lease model, but a holder that crashed did not let go (the
	// crash was the fault).
	var held map[string][]checker.Interval
	if r.rec.check != nil { // nothing recorded (bench --no-history): no holds known
		held = r.rec.check.Intervals()
	}
	for _, ivs := range held {
		for _, iv := range ivs {
			tenure := verdict.Tenure{Key: iv.Key, Proc: iv.Proc, Start: iv.Start, End: min(iv.End, r.last), Learned: iv.Learned}
			end := tenure.End
			if iv.Fate != nil && iv.Fate.Crashed != 0 {
				end = r.last
			}
			d.Holds = append(d.Holds, verdict.Span{Start: iv.Start, End: end})
			d.Tenures = append(d.Tenures, tenure)
		}
	}
	for _, w := range r.windows {
		if w.Instant {
			d.Instant = append(d.Instant, verdict.Span{Start: w.Start, End: w.End})
			if w.AtGrant {
				d.AtHold = append(d.AtHold, verdict.Span{Start: w.Start, End: w.End})
			}
			continue
		}
		d.Faults = append(d.Faults, verdict.Span{Start: w.Start, End: w.End})
		if w.AtGrant && w.InPlace > 0 {
			// A lasting fault aimed at a hold must be in place while it
			// lasts (a clock command that ran for seconds).
			at := verdict.Span{Start: w.Start, End: w.InPlace}
			if f, err := chaos.New(w.Label); err == nil && chaos.NeedsOf(f).Links {
				d.AtRelease = append(d.AtRelease, at)
			} else {
				d.AtHold = append(d.AtHold, at)
			}
		}
	}
	return d
}

// leaseOf is how long after an instant fault (a crash) the lock answers
// for it (Decisive.Lease): its TTL, or the session that frees a crashed
// holder's lock; for a lock nothing frees (Weak.NoExpiry), the rest of the
// run, where it stays blocked: a 0.8 s stall on the crash of a redis-setnx
// holder could not have made the key stay held for the seconds after it.
func leaseOf(a impls.Approach, ttl time.Duration, run verdict.Span) int64 {
	if a.Weak.NoExpiry {
		return run.End - run.Start
	}
	var lease int64
	if a.Caps.TTL {
		lease = int64(ttl)
	}
	return max(lease, int64(a.CrashFreedAfter))
}

// stallWindows are stalls as the timeline shades them.
func stallWindows(stalls []verdict.Stall) []report.Window {
	out := make([]report.Window, len(stalls))
	for i, s := range stalls {
		out[i] = report.Window{Start: s.Start, End: s.End, Label: s.Who}
	}
	return out
}

// indexTime is one recorded event's index, time and client.
type indexTime struct {
	i, t int64
	proc int
}

// eventTimes maps the indices of a case's events to their times and
// clients, to place its violations (which name their events by index) in
// time. Events come in nearly in index order (a worker's and the
// runner's record side by side); it sorts once, when first asked.
type eventTimes struct {
	all      []indexTime
	unsorted bool
}

func (e *eventTimes) add(ev history.Event) {
	if n := len(e.all); n > 0 && e.all[n-1].i > ev.Index {
		e.unsorted = true
	}
	e.all = append(e.all, indexTime{ev.Index, ev.T, ev.Proc})
}

func (e *eventTimes) at(i int64) (t int64, proc int, ok bool) {
	if e.unsorted {
		sort.Slice(e.all, func(a, b int) bool { return e.all[a].i < e.all[b].i })
		e.unsorted = false
	}
	k := sort.Search(len(e.all), func(j int) bool { return e.all[j].i >= i })
	if k < len(e.all) && e.all[k].i == i {
		return e.all[k].t, e.all[k].proc, true
	}
	return 0, 0, false
}

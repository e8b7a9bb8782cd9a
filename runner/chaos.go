package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/tcpproxy"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
)

// nemesisRecorder writes the engine's events into the run's history (as
// process -1, f "nemesis", Jepsen's convention) and keeps them for the
// case's fault windows.
type nemesisRecorder struct {
	// idBase keeps injection ids unique in a history shared by cases
	// (each engine numbers from 1).
	idBase int64
	rec    history.Recorder
	clk    interface{ Nanos() int64 }
	mu     sync.Mutex
	evs    []history.Event
	first  int64 // when the first injection took effect; 0: none did
	last   int64 // when the last one did
	// began are the injections in force (by id): when each took effect,
	// how long it was planned to last (0: until healed at the end) and
	// the step they came from.
	began map[int64]plannedSpan
	// steps are the fault steps that were due (a fault on a target; the
	// repeats of an `every` step are one step), each true once one of its
	// injections ran its planned length (or was instantaneous, or planned
	// until the end). The case asked its question when every step due
	// did: a partition that set the stage and a restart that failed never
	// asked it.
	steps map[string]bool
	// stepFirst is when each step's first injection took effect.
	stepFirst map[string]int64
}

type plannedSpan struct {
	at   int64
	dur  time.Duration
	step string
}

func stepOf(v history.NemesisValue) string { return v.Fault + " " + v.Selector }

// fullLength is how much of its planned length an injection must have
// run to count as made: the end of the run cuts the last one short.
const fullLength = 0.9

func (n *nemesisRecorder) Nemesis(typ history.Type, v history.NemesisValue) {
	v.ID += n.idBase
	b, _ := json.Marshal(v)
	ev := history.Event{Proc: -1, Type: typ, F: history.Nemesis, Value: b, T: n.clk.Nanos(), Error: v.Error}
	ev = n.rec.Record(ev)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evs = append(n.evs, ev)
	if v.Op == history.NemesisStart {
		if n.steps == nil {
			n.steps, n.began = map[string]bool{}, map[int64]plannedSpan{}
		}
		if _, ok := n.steps[stepOf(v)]; !ok {
			n.steps[stepOf(v)] = false
		}
	}
	if v.Op == history.NemesisStart && typ == history.OK {
		if n.first == 0 {
			n.first = ev.T
		}
		n.last = ev.T
		if n.stepFirst == nil {
			n.stepFirst = map[string]int64{}
		}
		if _, ok := n.stepFirst[stepOf(v)]; !ok {
			n.stepFirst[stepOf(v)] = ev.T
		}
		planned, _ := time.ParseDuration(v.For)
		n.began[v.ID] = plannedSpan{at: ev.T, dur: planned, step: stepOf(v)}
	}
	if v.Op == history.NemesisStop && typ != history.Invoke {
		if b, ok := n.began[v.ID]; ok {
			delete(n.began, v.ID)
			ran := time.Duration(ev.T - b.at)
			if v.Instant || b.dur == 0 || float64(ran) >= fullLength*float64(b.dur) {
				n.steps[b.step] = true
			}
		}
	}
}

// asked reports whether every fault step that was due took effect for
// its planned length in one of its injections (one still in force
// counts: it is healed at the end, or answered).
func (n *nemesisRecorder) asked() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	inForce := map[string]bool{}
	for _, b := range n.began {
		inForce[b.step] = true
	}
	for step, full := range n.steps {
		if !full && !inForce[step] {
			return false
		}
	}
	return len(n.steps) > 0
}

// lastStepFirst is when the last of the steps to take effect first did
// (0: none did): a step that set the stage (a partition from the start)
// comes before the one that asks the question (a restart while held).
func (n *nemesisRecorder) lastStepFirst() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var at int64
	for _, t := range n.stepFirst {
		at = max(at, t)
	}
	return at
}

// started reports whether a fault has taken effect.
func (n *nemesisRecorder) started() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.first != 0
}

// windows are the case's fault windows for the timeline and results.json;
// a fault never healed runs to end.
func (n *nemesisRecorder) windows(origin, end int64) ([]report.Window, []report.Fault) {
	n.mu.Lock()
	evs := append([]history.Event(nil), n.evs...)
	n.mu.Unlock()
	hws := history.FaultWindows(evs)
	var fs []report.Fault
	for _, w := range hws {
		f := report.Fault{Fault: w.Fault, Target: w.Target, At: time.Duration(w.Start - origin).Seconds()}
		if w.End != 0 {
			f.For = time.Duration(w.End - w.Start).Seconds()
		}
		fs = append(fs, f)
	}
	// Injections that failed are listed too, with their error.
	for _, ev := range evs {
		var v history.NemesisValue
		if ev.Type == history.Fail && json.Unmarshal(ev.Value, &v) == nil && v.Op == history.NemesisStart {
			target := v.Target
			if target == "" {
				target = v.Selector
			}
			fs = append(fs, report.Fault{Fault: v.Fault, Target: target, At: time.Duration(ev.T - origin).Seconds(), Error: ev.Error})
		}
	}
	return report.Windows(hws, end), fs
}

// holdingWaiter makes `when:` steps wait for a holder, its renewal or its
// release, and tells how long ago it came about (chaos.Waiter).
type holdingWaiter struct {
	holders *holders
	key     func(string) string
	now     func() int64 // the history's clock (ns)
	begun   func()       // told once the wait has taken its bearings (tests); nil: nobody
}

func (w holdingWaiter) Wait(ctx context.Context, when chaos.When) (time.Duration, error) {
	h, key := w.holders, w.key(when.Key())
	from := w.now()
	var at int64 // when the condition came true, by the event that made it so
	var ready func() bool
	switch {
	case when.Renewed != "":
		ready = func() bool {
			_, _, held := h.holderSlot(key)
			var renewed bool
			at, renewed = h.renewed[key]
			return held && renewed
		}
	case when.Releasing != "":
		h.mu.Lock()
		asked := h.releases[key]
		h.mu.Unlock()
		ready = func() bool {
			at = h.releasedAt[key]
			return h.releases[key] > asked
		}
	default:
		ready = func() bool {
			_, _, ok := h.holderSlot(key)
			at = h.since[key]
			return ok
		}
	}
	if w.begun != nil {
		w.begun()
	}
	if !h.until(ctx, 24*time.Hour, ready) {
		return 0, ctx.Err()
	}
	// A condition already true when the step fell due came about then.
	return time.Duration(max(w.now()-max(at, from), 0)), nil
}

// compileFaults checks and compiles a case's fault steps.
func compileFaults(c Case) ([]chaos.Planned, error) {
	if len(c.Faults) == 0 {
		return nil, nil
	}
	plan, err := chaos.Compile(c.Faults, c.Workload.Seed, c.Workload.Duration)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return plan, nil
}

// placement is where a plan's servers will run: started by locklab
// (as containers or not), or the user's (ext).
type placement struct {
	docker bool
	ext    *cluster.ExternalConfig
}

// node is what a step's node selector will pick, as planned: nil when
// locklab can do nothing to any of them (the user's servers without fault
// commands).
func (w placement) node(server impls.Server, sel chaos.Selector) (chaos.Process, error) {
	if w.ext == nil {
		return cluster.Planned(server, w.docker)
	}
	var names []string
	switch {
	case len(sel.Nodes) > 0:
		names = sel.Nodes
	case namedNode(sel.Node):
		names = []string{sel.Node}
	}
	node, ok, err := w.ext.Planned(server, names)
	if err != nil || !ok {
		return nil, err
	}
	return node, nil
}

// checkAvailable asks every fault whether it can act on the kind of target
// its step selects, before anything starts: a server of the user's cannot
// be paused without a fault command to do it, a goroutine client cannot be
// stopped, only a container (or a fault command) can cut a server off its
// network, an etcd node's clock cannot be moved. A node target is the node
// as it will run where the plan's servers run: cluster.Planned answers by
// the rules of a started node.
func checkAvailable(c Case, where placement) error {
	for i, st := range c.Faults {
		t := chaos.Target{Kind: st.Target.Kind(), Name: st.Target.String()}
		switch t.Kind {
		case chaos.TargetNode:
			server := c.Approach.Server
			if st.Target.Server != "" {
				server = impls.Server(st.Target.Server)
			}
			node, err := where.node(server, st.Target)
			if err != nil {
				return fmt.Errorf("%s: fault %d (%s): %w", c.Name, i+1, st.Fault.Kind(), err)
			}
			if node != nil {
				t.Process = node
			}
			if !c.Direct {
				t.Links = placeholderLinks
			}
		case chaos.TargetLink:
			if !c.Direct {
				t.Links = placeholderLinks
			}
		case chaos.TargetClient:
			if c.Processes || c.Approach.OwnProcess {
				t.Process = plannedClient{}
			}
			t.Clock = &plannedClock{}
		}
		if err := st.Fault.Available(t); err != nil {
			return fmt.Errorf("%s: fault %d (%s): %w", c.Name, i+1, st.Fault.Kind(), err)
		}
	}
	return nil
}

// A client and its clock before they exist, for the availability check:
// only whether a client has a process and a clock matters there. The
// links likewise: only that there are some.
type plannedClient struct{}

func (plannedClient) Pause() error  { return nil }
func (plannedClient) Resume() error { return nil }
func (plannedClient) Kill() error   { return nil }
func (plannedClient) Hang() error   { return nil }
func (plannedClient) Unhang() error { return nil }

type plannedClock struct{ d time.Duration }

func (c *plannedClock) Shift(d time.Duration) { c.d += d }
func (c *plannedClock) Offset() time.Duration { return c.d }

var placeholderLinks = make([]*tcpproxy.Proxy, 1)

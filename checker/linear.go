package checker

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/history"
)

// lockOp is the input of one mutex operation.
type lockOp struct {
	Acquire bool
	Proc    int
}

// free is the model state of an unheld lock; otherwise the state is the
// holder's process.
const free = math.MinInt

// MutexModel is the owner-aware mutex: acquire when free makes the caller
// the holder; release by the holder frees it; anything else is illegal.
var MutexModel = mutexModelFrom(free)

// mutexModelFrom is the mutex model starting in state init (a holder, or
// free): each segment of a split history starts where the last one ended.
func mutexModelFrom(init int) porcupine.Model {
	m := mutexModel
	m.Init = func() any { return init }
	return m
}

var mutexModel = porcupine.Model{
	Init: func() any { return free },
	Step: func(state, input, _ any) (bool, any) {
		holder, op := state.(int), input.(lockOp)
		switch {
		case op.Acquire && holder == free:
			return true, op.Proc
		case !op.Acquire && holder == op.Proc:
			return true, free
		}
		return false, holder
	},
	DescribeOperation: func(input, _ any) string {
		op := input.(lockOp)
		if op.Acquire {
			return fmt.Sprintf("client %d acquires", op.Proc)
		}
		return fmt.Sprintf("client %d releases", op.Proc)
	},
	DescribeState: func(state any) string {
		if state.(int) == free {
			return "free"
		}
		return fmt.Sprintf("held by client %d", state.(int))
	},
}

// Linear collects acquire and release operations per key for the
// linearizability check. Failed operations did not happen and are left out;
// indeterminate ones (info, or no completion at all) may have happened at
// any time after their invocation, so they return at infinity.
type Linear struct {
	model   Model
	pending map[procKey]pendingOp
	ops     map[string][]rawOp
	holding map[procKey]bool // who holds what, for crashes
	// Re-entries are left out (the model has none): reentries counts a
	// holder's granted and not yet given back, skipping the call in
	// flight that asks or gives one back.
	reentries map[procKey]int
	skipping  map[procKey]bool
}

// rawOp is an operation as recorded: no pointers, so a long run costs the
// garbage collector nothing and growing the slice is a plain copy. It
// becomes a porcupine.Operation only when its key is checked.
type rawOp struct {
	proc      int
	acquire   bool
	call, ret int64
}

func (r rawOp) operation() porcupine.Operation {
	return porcupine.Operation{ClientId: r.proc, Input: lockOp{Acquire: r.acquire, Proc: r.proc}, Call: r.call, Return: r.ret}
}

type pendingOp struct {
	op   lockOp
	call int64
}

// NewLinear returns an empty collector for model: it tells what a crash
// does (the failed releases that end a tenure under the lease model are
// left out here, as every failed operation: porcupine only draws).
func NewLinear(model Model) *Linear {
	return &Linear{model: model, pending: map[procKey]pendingOp{}, ops: map[string][]rawOp{}, holding: map[procKey]bool{},
		reentries: map[procKey]int{}, skipping: map[procKey]bool{}}
}

// Add feeds one event, in history order.
func (l *Linear) Add(ev history.Event) {
	if ev.F == history.Crash {
		forget(l.reentries, ev.Proc)
		forget(l.skipping, ev.Proc)
		// Under the lease model, a crashed holder's lock is freed by the
		// server at some time after the crash (a TTL, a session timeout, a
		// dropped connection), or never: as a release invoked at the crash
		// whose outcome is unknown. Under the mutex model nothing expires.
		if l.model == ModelMutex {
			return
		}
		for pk := range l.holding {
			if pk.proc == ev.Proc {
				delete(l.holding, pk)
				l.add(pk.key, ev.Proc, pendingOp{op: lockOp{Proc: ev.Proc}, call: ev.T}, math.MaxInt64)
			}
		}
		return
	}
	if ev.F != history.Acquire && ev.F != history.Release {
		return
	}
	pk := procKey{ev.Proc, ev.Key}
	if l.reentry(pk, ev) {
		return
	}
	switch {
	case ev.F == history.Acquire && ev.Type == history.OK:
		l.holding[pk] = true
	case ev.F == history.Release && ev.Type == history.Invoke:
		delete(l.holding, pk)
	}
	switch ev.Type {
	case history.Invoke:
		if p, ok := l.pending[pk]; ok { // a new call without completion: the old one is indeterminate
			l.add(ev.Key, ev.Proc, p, math.MaxInt64)
		}
		l.pending[pk] = pendingOp{op: lockOp{Acquire: ev.F == history.Acquire, Proc: ev.Proc}, call: ev.T}
	case history.OK, history.Info:
		p, ok := l.pending[pk]
		if !ok {
			return // a completion without invocation tells nothing
		}
		delete(l.pending, pk)
		ret := ev.T
		if ev.Type == history.Info {
			ret = math.MaxInt64
		}
		l.add(ev.Key, ev.Proc, p, ret)
	case history.Fail:
		delete(l.pending, pk)
	}
}

// reentry reports whether ev asks for a re-entry, gives one back, or
// answers such a call: none of them is the model's.
func (l *Linear) reentry(pk procKey, ev history.Event) bool {
	if ev.Type != history.Invoke {
		if !l.skipping[pk] {
			return false
		}
		delete(l.skipping, pk)
		if ev.F == history.Acquire && ev.Type == history.OK {
			l.reentries[pk]++
		}
		return true
	}
	delete(l.skipping, pk)
	switch {
	case ev.F == history.Acquire && ev.Reentry && l.holding[pk]:
	case ev.F == history.Release && l.reentries[pk] > 0:
		l.reentries[pk]--
	default:
		return false
	}
	l.skipping[pk] = true
	return true
}

func (l *Linear) add(key string, proc int, p pendingOp, ret int64) {
	l.ops[key] = append(l.ops[key], rawOp{proc: proc, acquire: p.op.Acquire, call: p.call, ret: ret})
}

// KeyResult is the linearizability verdict for one key.
type KeyResult struct {
	Key    string                `json:"key"`
	Ops    int                   `json:"ops"`
	Result porcupine.CheckResult `json:"result"` // Ok, Illegal or Unknown (time limit hit)
	Took   time.Duration         `json:"took_ns"`
	HTML   string                `json:"html,omitempty"` // visualization written for a failing key
}

// Check checks every key, keys in parallel, each within timeLimit. For a key
// that is not linearizable and htmlDir != "", porcupine's visualization is
// written there.
func (l *Linear) Check(ctx context.Context, timeLimit time.Duration, htmlDir string) ([]KeyResult, error) {
	raw := make(map[string][]rawOp, len(l.ops))
	for k, v := range l.ops {
		raw[k] = v
	}
	for pk, p := range l.pending { // never completed: indeterminate
		raw[pk.key] = append(raw[pk.key], rawOp{proc: pk.proc, acquire: p.op.Acquire, call: p.call, ret: math.MaxInt64})
	}
	// Converted one key at a time, by the worker that checks it.
	ops := func(key string) []porcupine.Operation {
		out := make([]porcupine.Operation, len(raw[key]))
		for i, r := range raw[key] {
			out[i] = r.operation()
		}
		return out
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	results := make([]KeyResult, len(keys))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				start := time.Now()
				res, _, _ := checkSplit(ops(keys[i]), timeLimit)
				results[i] = KeyResult{Key: keys[i], Ops: len(raw[keys[i]]), Result: res, Took: time.Since(start)}
			}
		}()
	}
	for i := range keys {
		select {
		case work <- i:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return results, err
	}
	if htmlDir == "" {
		return results, nil
	}
	for i := range results {
		if results[i].Result != porcupine.Illegal {
			continue
		}
		_, seg, init := checkSplit(ops(results[i].Key), timeLimit)
		model := mutexModelFrom(init)
		_, info := porcupine.CheckOperationsVerbose(model, seg, timeLimit)
		if err := os.MkdirAll(htmlDir, 0o755); err != nil {
			return results, err
		}
		path := visualizationPath(htmlDir, results[i].Key)
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			return results, fmt.Errorf("visualize %s: %w", results[i].Key, err)
		}
		results[i].HTML = path
	}
	return results, nil
}

// checkSplit checks one key's operations piece by piece. Porcupine's cost
// grows with the square of a history's length, so one long run on one key
// would exhaust memory. But where no operation is in flight, the mutex's
// state is the same in every valid linearization (acquires and releases
// alternate, so the holder is the one process with one more acquire than
// release), and the history splits there. It returns the verdict, and for
// an illegal or undecided result the failing piece and its starting state.
func checkSplit(ops []porcupine.Operation, timeLimit time.Duration) (porcupine.CheckResult, []porcupine.Operation, int) {
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	deadline := time.Now().Add(timeLimit)
	state := free
	for start := 0; start < len(ops); {
		end := start + 1
		reach := ops[start].Return
		for end < len(ops) && ops[end].Call <= reach {
			reach = max(reach, ops[end].Return)
			end++
		}
		seg := ops[start:end]
		left := time.Until(deadline)
		if left <= 0 {
			return porcupine.Unknown, seg, state
		}
		if res := porcupine.CheckOperationsTimeout(mutexModelFrom(state), seg, left); res != porcupine.Ok {
			return res, seg, state
		}
		state = endState(state, seg)
		start = end
	}
	return porcupine.Ok, nil, free
}

// endState is the mutex state after a legal, fully completed segment.
func endState(init int, seg []porcupine.Operation) int {
	net := map[int]int{}
	for _, op := range seg {
		o := op.Input.(lockOp)
		if o.Acquire {
			net[o.Proc]++
		} else {
			net[o.Proc]--
		}
	}
	state := init
	if init != free && net[init] < 0 {
		state = free
	}
	for p, n := range net {
		if n > 0 {
			state = p
		}
	}
	return state
}

// visualizationPath is where key's drawing goes in dir: named after the
// key, or linearizability.html for a history without keys (a Jepsen
// history of one lock).
func visualizationPath(dir, key string) string {
	if key == "" {
		return filepath.Join(dir, "linearizability.html")
	}
	return filepath.Join(dir, "linearizability-"+fileSafe(key)+".html")
}

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// visualizeOps bounds porcupine's drawing of a failing key: the operations
// just before and after its first violation (porcupine's search grows
// quickly with the operations in flight; a person reads a few hundred).
const visualizeBefore, visualizeAfter = 300, 100

// Visualize reports every key's verdict as the exact mutex check found it
// (failing: each failing key with the time of its first violation) and,
// with htmlDir, draws porcupine's visualization of the operations around
// each failing key's first violation. porcupine judges infos as taking
// effect, so it may find a drawn window legal: then no file is written.
func (l *Linear) Visualize(ctx context.Context, failing map[string]int64, timeLimit time.Duration, htmlDir string) ([]KeyResult, error) {
	keys := make([]string, 0, len(l.ops))
	for k := range l.ops {
		keys = append(keys, k)
	}
	for pk := range l.pending {
		if _, ok := l.ops[pk.key]; !ok {
			keys = append(keys, pk.key)
		}
	}
	sort.Strings(keys)
	var out []KeyResult
	for _, k := range keys {
		r := KeyResult{Key: k, Ops: len(l.ops[k]), Result: porcupine.Ok}
		at, bad := failing[k]
		if bad {
			r.Result = porcupine.Illegal
		}
		if bad && htmlDir != "" && ctx.Err() == nil {
			path, err := l.draw(k, at, timeLimit, htmlDir)
			if err != nil {
				return out, err
			}
			r.HTML = path
		}
		out = append(out, r)
	}
	return out, nil
}

func (l *Linear) draw(key string, at int64, timeLimit time.Duration, htmlDir string) (string, error) {
	raw := append([]rawOp(nil), l.ops[key]...)
	sort.SliceStable(raw, func(i, j int) bool { return raw[i].call < raw[j].call })
	i := sort.Search(len(raw), func(i int) bool { return raw[i].call > at })
	lo, hi := max(0, i-visualizeBefore), min(len(raw), i+visualizeAfter)
	ops := make([]porcupine.Operation, 0, hi-lo)
	for _, r := range raw[lo:hi] {
		ops = append(ops, r.operation())
	}
	// The window starts in whatever state the ops before it left: try the
	// lock free and, failing that, held by each process seen.
	inits := []int{free}
	seen := map[int]bool{}
	for _, o := range ops {
		if !seen[o.ClientId] {
			seen[o.ClientId] = true
			inits = append(inits, o.ClientId)
		}
	}
	for _, init := range inits[:min(len(inits), 4)] {
		model := mutexModelFrom(init)
		res, info := porcupine.CheckOperationsVerbose(model, ops, timeLimit)
		if res != porcupine.Illegal {
			continue
		}
		if err := os.MkdirAll(htmlDir, 0o755); err != nil {
			return "", err
		}
		path := visualizationPath(htmlDir, key)
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			return "", fmt.Errorf("visualize %s: %w", key, err)
		}
		return path, nil
	}
	return "", nil
}

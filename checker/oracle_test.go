package checker

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/locklab/locklab/history"
)

// oracleOp is one lock operation as the brute-force oracle sees it.
type oracleOp struct {
	proc    int
	acquire bool
	// call, ret: the op takes effect at one instant in [call, ret];
	// ret = MaxInt64 for one that may take effect at any time after call.
	call, ret int64
	// optional: it may also never take effect (indeterminate).
	optional bool
	// ifHeld (lease model): a release answered "not held". It takes effect
	// at its invocation, giving back one hold if its process holds the
	// lock, and does nothing otherwise.
	ifHeld bool
	// reentry: an acquire by a process meaning to re-enter: legal when
	// the lock is free, or held by that process (one hold more).
	reentry bool
	// all (lease model): a crash, which ends the tenure whatever the
	// holds.
	all bool
}

// oracleOps reads a history as the model says: under both, an ok op takes
// effect within [invoke, answer], an indeterminate one (info, or never
// answered) at any time after its invocation or never, a failed acquire
// never. A failed release never happened under the mutex model; under the
// lease model it ends its process's tenure at its invocation. A crash
// frees nothing under the mutex model; under the lease model it is a
// release invoked at the crash, indeterminate.
func oracleOps(evs []history.Event, model Model) []oracleOp {
	type call struct {
		acquire, reentry bool
		t                int64
	}
	pending := map[int]call{}
	var ops []oracleOp
	indeterminate := func(p int, c call) {
		ops = append(ops, oracleOp{proc: p, acquire: c.acquire, reentry: c.reentry, call: c.t, ret: math.MaxInt64, optional: true})
	}
	for _, e := range evs {
		if e.F == history.Crash {
			if c, ok := pending[e.Proc]; ok {
				delete(pending, e.Proc)
				indeterminate(e.Proc, c)
			}
			if model == ModelLease {
				ops = append(ops, oracleOp{proc: e.Proc, call: e.T, ret: math.MaxInt64, optional: true, all: true})
			}
			continue
		}
		if e.F != history.Acquire && e.F != history.Release {
			continue
		}
		if e.Type == history.Invoke {
			if c, ok := pending[e.Proc]; ok {
				indeterminate(e.Proc, c)
			}
			pending[e.Proc] = call{acquire: e.F == history.Acquire, reentry: e.Reentry, t: e.T}
			continue
		}
		c := pending[e.Proc]
		delete(pending, e.Proc)
		switch {
		case e.Type == history.OK:
			ops = append(ops, oracleOp{proc: e.Proc, acquire: c.acquire, reentry: c.reentry, call: c.t, ret: e.T})
		case e.Type == history.Info:
			indeterminate(e.Proc, c)
		case !c.acquire && model == ModelLease:
			ops = append(ops, oracleOp{proc: e.Proc, call: c.t, ret: c.t, ifHeld: true})
		}
	}
	for p, c := range pending {
		indeterminate(p, c)
	}
	return ops
}

// oracleLinearizable decides, by exhaustive search, whether some order of
// the operations is legal for an owner-aware re-entrant mutex starting
// free (acquire when free makes the caller the holder, a re-entry by the
// holder adds a hold; release by the holder gives one back, and the last
// frees it), each op at one instant within its window, no later op before
// an earlier one's instant (Wing and Gong's search). Small histories only:
// it is exponential.
func oracleLinearizable(ops []oracleOp) bool {
	placed := make([]bool, len(ops))
	var search func(holder, holds int, now int64) bool
	search = func(holder, holds int, now int64) bool {
		// The ops that must take effect bound what can come next: none
		// may be placed after a must-op's window closed.
		minRet := int64(math.MaxInt64)
		done := true
		for i, o := range ops {
			if !placed[i] && !o.optional {
				done = false
				minRet = min(minRet, o.ret)
			}
		}
		if done {
			return true // the rest may never take effect
		}
		for i, o := range ops {
			at := max(now, o.call)
			if placed[i] || at > o.ret || at > minRet {
				continue
			}
			next, nextHolds := holder, holds
			switch {
			case o.acquire && holder == -1:
				next, nextHolds = o.proc, 1
			case o.acquire && o.reentry && holder == o.proc:
				nextHolds++
			case !o.acquire && holder == o.proc && (holds == 1 || o.all):
				next, nextHolds = -1, 0
			case !o.acquire && holder == o.proc:
				nextHolds--
			case o.ifHeld, o.all:
			default:
				continue
			}
			placed[i] = true
			if search(next, nextHolds, at) {
				return true
			}
			placed[i] = false
		}
		return false
	}
	return search(-1, 0, math.MinInt64)
}

// historyKind sets what a random history's lock service and clients do.
type historyKind struct {
	buggy     bool // now and then grants twice, or frees a lock its holder did not release
	expiring  bool // a lease now and then runs out under its holder (a crashed holder's too)
	crashes   bool // clients now and then crash
	keepGoing bool // half the clients whose acquire was lost release as if they held
	// reentrant: holders now and then acquire again (re-entry), and the
	// service counts holds (a buggy one now and then frees the lock at a
	// re-entry's release); a client whose re-entry's reply was lost stops
	// for good, as locklab's do.
	reentrant bool
}

// randomHistory builds a small one-key history: each process acquires,
// holds, releases; a release the service refuses (its holder's lease ran
// out, or a buggy service gave the lock away) is answered "not held" and
// the process goes on; replies are lost at random, after which the process
// stops for good (Jepsen's rule), except, with keepGoing, after half its
// lost acquires: then it releases as if it held.
func randomHistory(rng *rand.Rand, procs int, k historyKind) []history.Event {
	type state struct {
		next    int64 // when it may start its next operation
		holding bool
		depth   int // re-entries it holds
		retired bool
		ops     int
	}
	ps := make([]state, procs)
	holder, holds := -1, 0
	var evs []history.Event
	t := int64(0)
	for step := 0; step < 40; step++ {
		p := rng.IntN(procs)
		s := &ps[p]
		if s.retired || s.ops >= 4 {
			continue
		}
		t += int64(1 + rng.IntN(3))
		call := max(t, s.next)
		if k.expiring && holder != -1 && rng.IntN(6) == 0 {
			holder = -1 // the lease ran out under its holder
		}
		if k.crashes && rng.IntN(12) == 0 {
			evs = append(evs, history.Event{Proc: p, Type: history.Info, F: history.Crash, T: call})
			s.retired = true
			if holder == p && k.expiring {
				holder = -1
			}
			continue
		}
		reentry := k.reentrant && s.holding && s.depth < 2 && rng.IntN(3) == 0
		acquire := !s.holding || reentry
		f := history.Release
		if acquire {
			f = history.Acquire
		}
		evs = append(evs, history.Event{Proc: p, Type: history.Invoke, F: f, Key: "k", T: call, Reentry: reentry})
		// The service applies the operation (or not) at call+1.
		applied := false
		switch {
		case reentry && holder == p:
			holds, applied = holds+1, true
		case acquire && (holder == -1 || (k.buggy && rng.IntN(2) == 0)):
			holder, holds, applied = p, 1, true
		case !acquire && holder == p && holds > 1 && !(k.buggy && rng.IntN(3) == 0):
			holds, applied = holds-1, true
		case !acquire && (holder == p || (k.buggy && rng.IntN(3) == 0)):
			holder, holds, applied = -1, 0, true
		}
		ret := call + 2 + int64(rng.IntN(4))
		switch {
		case rng.IntN(5) == 0: // the reply is lost
			evs = append(evs, history.Event{Proc: p, Type: history.Info, F: f, Key: "k", T: ret, Error: "reply lost", Reentry: reentry})
			if acquire && !reentry && k.keepGoing && rng.IntN(2) == 0 {
				s.holding = true // releases next, as if the acquire took effect
			} else {
				s.retired = true
			}
		case applied:
			evs = append(evs, history.Event{Proc: p, Type: history.OK, F: f, Key: "k", T: ret, Reentry: reentry})
			switch {
			case reentry:
				s.depth++
			case !acquire && s.depth > 0:
				s.depth--
			default:
				s.holding = acquire
			}
		case acquire:
			evs = append(evs, history.Event{Proc: p, Type: history.Fail, F: f, Key: "k", T: ret, Error: "already held", Reentry: reentry})
		case s.depth > 0:
			evs = append(evs, history.Event{Proc: p, Type: history.Fail, F: f, Key: "k", T: ret, Error: "not held"})
			s.depth-- // gives up that hold and goes on to its next release
		default:
			evs = append(evs, history.Event{Proc: p, Type: history.Fail, F: f, Key: "k", T: ret, Error: "not held"})
			s.holding = false
		}
		s.next, s.ops = ret+1, s.ops+1
	}
	// History order is time order.
	sortEvents(evs)
	for i := range evs {
		evs[i].Index = int64(i)
	}
	return evs
}

func sortEvents(evs []history.Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].T < evs[j-1].T; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// The exact check agrees with the brute-force oracle, under each model, on
// thousands of small histories from correct, expiring and buggy services,
// with lost replies, refused releases, crashes and re-entries. Both verdicts come up often under each model, the models disagree on
// many histories, and the lease model's revocations during a release come
// up in histories it calls linearizable.
func TestExactCheckAgreesWithBruteForceOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	counts := map[Model]map[bool]int{ModelMutex: {}, ModelLease: {}}
	reentered := map[Model]map[bool]int{ModelMutex: {}, ModelLease: {}} // histories with a re-entry granted
	differ, revocations := 0, 0
	for i := 0; i < 12000; i++ {
		k := historyKind{buggy: i%2 == 1, keepGoing: i%4 >= 2, expiring: i%3 != 0, crashes: i%5 >= 2, reentrant: i%7 >= 4}
		evs := randomHistory(rng, 2+rng.IntN(3), k)
		got := map[Model]bool{}
		for _, model := range Models {
			want := oracleLinearizable(oracleOps(evs, model))
			v := checkAll(t, model, evs)
			got[model] = v.Linearizable == LinYes
			if got[model] != want {
				t.Fatalf("history %d (%+v), model %s: checker says linearizable=%v, oracle %v\n%v", i, k, model, got[model], want, evs)
			}
			// No resource in these histories: safe is linearizable, and a
			// revocation during a release (an anomaly) changes neither.
			if v.Safe() != want {
				t.Fatalf("history %d, model %s: linearizable=%v but Safe()=%v (%v)", i, model, want, v.Safe(), v.Violations)
			}
			if model == ModelLease && want {
				revocations += len(v.Anomalies)
			}
			counts[model][want]++
			if slices.ContainsFunc(evs, func(e history.Event) bool { return e.Reentry && e.Type == history.OK }) {
				reentered[model][want]++
			}
		}
		if got[ModelMutex] != got[ModelLease] {
			differ++
		}
	}
	for _, model := range Models {
		if counts[model][true] < 1000 || counts[model][false] < 1000 {
			t.Fatalf("model %s: the generator must give both verdicts often: %v", model, counts[model])
		}
	}
	for _, model := range Models {
		if reentered[model][true] < 300 || reentered[model][false] < 300 {
			t.Fatalf("model %s: histories with a re-entry granted must come with both verdicts often: %v", model, reentered[model])
		}
	}
	if differ < 500 || revocations < 500 {
		t.Fatalf("the models disagreed on %d histories, and linearizable lease histories held %d revocations during a release: want many of each", differ, revocations)
	}
	t.Logf("agreed on %v (with a re-entry granted: %v); the models disagreed on %d histories; %d revocations during a release reported in linearizable lease histories",
		counts, reentered, differ, revocations)
}

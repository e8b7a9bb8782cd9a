package checker

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/locklab/locklab/history"
)

// oracleOp is one lock operation as the brute-force oracle sees it.
type oracleOp struct {
	proc      int
	acquire   bool
	call, ret int64 // ret = MaxInt64: indeterminate (info or never completed)
}

// linearizable decides, by exhaustive search, whether some order of the
// operations is legal for an owner-aware mutex starting free (acquire when
// free makes the caller the holder; release by the holder frees it), where
// every ok operation takes effect at one instant within [call, ret] and
// every indeterminate one at one instant after its call, or never
// (Knossos's semantics). Small histories only: it is exponential.
func oracleLinearizable(ops []oracleOp) bool {
	placed := make([]bool, len(ops))
	var search func(holder int, done int) bool
	search = func(holder int, done int) bool {
		// Every ok operation placed: the rest are indeterminate, and may
		// never take effect.
		allOK := true
		minRet := int64(math.MaxInt64)
		for i, o := range ops {
			if !placed[i] && o.ret != math.MaxInt64 {
				allOK = false
				minRet = min(minRet, o.ret)
			}
		}
		if allOK {
			return true
		}
		for i, o := range ops {
			// o can come next if no unplaced ok operation returned before
			// o was called (real-time order).
			if placed[i] || o.call > minRet {
				continue
			}
			next := holder
			switch {
			case o.acquire && holder == -1:
				next = o.proc
			case !o.acquire && holder == o.proc:
				next = -1
			default:
				continue
			}
			placed[i] = true
			if search(next, done+1) {
				return true
			}
			placed[i] = false
		}
		return false
	}
	return search(-1, 0)
}

// randomHistory builds a small one-key history from a lock service that is
// correct, or that now and then grants twice or frees a lock its holder did
// not release (buggy), with replies lost at random: each process acquires,
// holds, releases, and stops for good after an indeterminate outcome
// (Jepsen's rule), except, with keepGoing, after half its lost acquires:
// then it releases as if it held (a client that does not follow the rule).
func randomHistory(rng *rand.Rand, procs int, buggy, keepGoing bool) ([]history.Event, []oracleOp) {
	type state struct {
		next    int64 // when it may start its next operation
		holding bool
		retired bool
		ops     int
	}
	ps := make([]state, procs)
	holder := -1
	var evs []history.Event
	var ops []oracleOp
	t := int64(0)
	for step := 0; step < 40; step++ {
		p := rng.IntN(procs)
		s := &ps[p]
		if s.retired || s.ops >= 3 {
			continue
		}
		t += int64(1 + rng.IntN(3))
		call := max(t, s.next)
		acquire := !s.holding
		f := history.Release
		if acquire {
			f = history.Acquire
		}
		evs = append(evs, history.Event{Proc: p, Type: history.Invoke, F: f, Key: "k", T: call})
		// The service applies the operation (or not) at call+1.
		applied := false
		switch {
		case acquire && (holder == -1 || (buggy && rng.IntN(2) == 0)):
			holder, applied = p, true
		case !acquire && (holder == p || (buggy && rng.IntN(3) == 0)):
			holder, applied = -1, true
		}
		ret := call + 2 + int64(rng.IntN(4))
		lost := rng.IntN(5) == 0
		switch {
		case lost:
			evs = append(evs, history.Event{Proc: p, Type: history.Info, F: f, Key: "k", T: ret})
			ops = append(ops, oracleOp{proc: p, acquire: acquire, call: call, ret: math.MaxInt64})
			if acquire && keepGoing && rng.IntN(2) == 0 {
				s.holding = true // releases next, as if the acquire took effect
			} else {
				s.retired = true
			}
		case applied:
			evs = append(evs, history.Event{Proc: p, Type: history.OK, F: f, Key: "k", T: ret})
			ops = append(ops, oracleOp{proc: p, acquire: acquire, call: call, ret: ret})
			s.holding = acquire
		case acquire:
			evs = append(evs, history.Event{Proc: p, Type: history.Fail, F: f, Key: "k", T: ret})
		default:
			// A release the service refused: the buggy service lost the
			// holder's lock. Retire the process so the oracle's model
			// (no expiry) and the checker agree on what it means.
			evs = append(evs, history.Event{Proc: p, Type: history.Info, F: f, Key: "k", T: ret})
			ops = append(ops, oracleOp{proc: p, acquire: false, call: call, ret: math.MaxInt64})
			s.retired = true
		}
		s.next, s.ops = ret+1, s.ops+1
	}
	// History order is time order.
	sortEvents(evs)
	for i := range evs {
		evs[i].Index = int64(i)
	}
	return evs, ops
}

func sortEvents(evs []history.Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].T < evs[j-1].T; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// The exact check agrees with the brute-force oracle on thousands of small
// histories from correct and buggy services with lost replies.
func TestExactCheckAgreesWithBruteForceOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	counts := map[bool]int{}
	for i := 0; i < 8000; i++ {
		evs, ops := randomHistory(rng, 2+rng.IntN(3), i%2 == 1, i%4 >= 2)
		want := oracleLinearizable(ops)
		c := New(true)
		for _, e := range evs {
			c.Add(e)
		}
		v, err := c.Verdict(context.Background(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := v.Linearizable == "yes"
		if got != want {
			t.Fatalf("history %d: checker says linearizable=%v, oracle %v\n%v", i, got, want, evs)
		}
		counts[want]++
	}
	if counts[true] < 500 || counts[false] < 500 {
		t.Fatalf("the generator must give both verdicts often: %v", counts)
	}
	t.Logf("agreed on %d linearizable and %d non-linearizable histories", counts[true], counts[false])
}

package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/declared"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// Expectations tell a violation known from new by the matrix's rules
// (expectations.yaml): a violation is known when a column whose scenario
// uses only fault kinds the case used too has a rule for the approach
// that predicts it; new otherwise. The one judgement of known and new:
// explore's findings, and the runner's cases (a class nothing predicts
// contradicts, Predict).
type Expectations struct {
	M *Matrix
	// Servers maps each approach the matrix knows by name onto its server
	// kind: a column applies to an approach it does not list (one from a
	// file, or a planted one) when it lists approaches of the same kind.
	Servers map[string]impls.Server
}

// NewExpectations reads what the matrix m (loaded against reg) expects.
func NewExpectations(m *Matrix, reg *impls.Registry) Expectations {
	e := Expectations{M: m, Servers: map[string]impls.Server{}}
	for _, a := range reg.All() {
		e.Servers[a.Name] = a.Server
	}
	return e
}

// sameMechanism names the fault a column of another kind speaks for:
// server-kill is a server restart whose downtime lasts its `for`.
var sameMechanism = map[string]string{"server-kill": "server-restart"}

// Mechanism is the fault kind whose columns speak for a fault of kind
// (server-kill's are server-restart's).
func Mechanism(kind string) string {
	if m, ok := sameMechanism[kind]; ok {
		return m
	}
	return kind
}

// Judgement is whether a violation is known, and why.
type Judgement struct {
	Known bool
	// Why names the rule that predicts it (known), or the rules that speak
	// for the approach under these faults and predict otherwise (new).
	Why string
	// Because are the fault kinds of the columns whose rules predict it:
	// a run without them that still shows it shows something no rule
	// predicted (see explorer.unmask). Empty when a rule predicts it with
	// no fault, or when only the hazard of every lease does.
	Because []string
}

// Judge says whether approach a showing class c under a case with fault
// kinds kinds and workload w is known.
//
// A double grant's consequences (a lost update, a revoked lock, a stale
// write) are known where a rule predicts a double grant, unless a rule of
// those columns forbids them (a fenced store must lose no update). A
// holder that outlived its lease (and what follows from it) is known of
// every approach whose leases end (a TTL, a session, a loss signal): the
// hazard of every lease that Kleppmann 2016 and shared/FAULTS.md §0
// describe, whatever fault kept the holder busy past its lease.
func (e Expectations) Judge(a impls.Approach, kinds []string, w workload.Spec, c verdict.Outcome) Judgement {
	var predicted, forbidden, other, because []string
	for _, f := range e.M.Faults {
		if !e.relevant(f, a, kinds, w) {
			continue
		}
		r, ok := e.M.RuleFor(f.Name, a)
		if !ok {
			continue
		}
		desc := fmt.Sprintf("%s, rule %s, expects %s", f.Name, r.Match, r.Expect)
		switch {
		case slices.ContainsFunc(r.Expect.Forbidden, c.Satisfies):
			forbidden = append(forbidden, desc)
		case slices.ContainsFunc(slices.Concat(r.Expect.Outcomes, r.Expect.May), c.Satisfies):
			predicted = append(predicted, desc)
			because = append(because, columnKinds(f)...)
		case c.FollowsFrom(slices.Concat(r.Expect.Outcomes, r.Expect.May)):
			predicted = append(predicted, desc+" (a double grant, which this follows from)")
			because = append(because, columnKinds(f)...)
		default:
			other = append(other, desc)
		}
	}
	switch {
	case len(predicted) > 0 && !(c.FollowsFromDoubleGrant() && len(forbidden) > 0):
		return Judgement{Known: true, Why: "matrix: " + predicted[0], Because: because}
	case len(forbidden) == 0 && leaseEnds(a) && (c == verdict.DoubleGrantOutlived || c.FollowsFromDoubleGrant() && !(c.FencedAway() && w.Fenced && a.Caps.Fencing)):
		return Judgement{Known: true, Why: "a holder outlived its lease: the hazard of every lease (Kleppmann 2016; shared/FAULTS.md §0)"}
	case len(forbidden) == 0 && c == verdict.Blocked && a.Weak.NoExpiry:
		return Judgement{Known: true, Why: "the approach declares no expiry: a lock whose holder is gone stays held ([RD], liveness property A)"}
	}
	under := strings.Join(kinds, " + ")
	if under == "" {
		under = "no fault"
	}
	why := fmt.Sprintf("no rule of matrix/expectations.yaml predicts %s for %s under %s", c, a.Name, under)
	switch {
	case len(forbidden) > 0:
		why += "; forbidden by " + strings.Join(forbidden, "; ")
	case len(other) > 0:
		why += "; the rules that speak: " + strings.Join(other, "; ")
	}
	return Judgement{Why: why}
}

// columnKinds are the fault kinds column f's scenario injects, as
// mechanisms (server-kill as server-restart).
func columnKinds(f Fault) []string {
	var out []string
	for _, ft := range f.Scenario.Faults {
		if k := Mechanism(ft.Fault.Kind()); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// relevant reports whether column f speaks for approach a in a case with
// fault kinds kinds and workload w: its scenario uses no fault kind the
// case did not (a column without faults speaks for every case), it runs
// a (or, for an approach it does not know, approaches of a's server
// kind), and where its clients write to the store, they fence as the
// case's do.
func (e Expectations) relevant(f Fault, a impls.Approach, kinds []string, w workload.Spec) bool {
	var mine []string
	for _, k := range kinds {
		mine = append(mine, Mechanism(k))
	}
	for _, k := range columnKinds(f) {
		if !slices.Contains(mine, k) {
			return false
		}
	}
	if !e.runs(f.Scenario, a) {
		return false
	}
	sw := f.Scenario.Workload
	if sw.Kind == workload.Counter || sw.Kind == workload.Tasks {
		return sw.Fenced == (w.Fenced && a.Caps.Fencing)
	}
	return true
}

// runs reports whether scenario s runs approach a, or, when a is not an
// approach the matrix knows, approaches of a's server kind.
func (e Expectations) runs(s *scenario.Scenario, a impls.Approach) bool {
	if _, known := e.Servers[a.Name]; known {
		return slices.Contains(s.Approaches, a.Name)
	}
	return slices.ContainsFunc(s.Approaches, func(n string) bool { return e.Servers[n] == a.Server })
}

// leaseEnds reports whether an approach's locks end without their holder:
// a TTL, a session, or a signal that the lock is gone.
func leaseEnds(a impls.Approach) bool {
	return a.Caps.TTL || a.Caps.LossSignal || a.CrashFreedAfter > 0
}

// ShippedExpectations are what the shipped matrix expects, loaded against
// what the shipped approaches declare (impls/declared): none of them need
// be linked, so a user's go test judges as `locklab run` does.
func ShippedExpectations() (Expectations, error) {
	reg, err := declared.Registry()
	if err != nil {
		return Expectations{}, err
	}
	return ShippedFor(reg)
}

// ShippedFor are what the shipped matrix expects, loaded against reg.
func ShippedFor(reg *impls.Registry) (Expectations, error) {
	m, err := Load(Shipped, reg)
	if err != nil {
		return Expectations{}, err
	}
	return NewExpectations(m, reg), nil
}

// Predict is expectation x of a case of approach a, with fault kinds
// kinds and workload w, knowing what the rules predict: each unsafe
// outcome Judge finds new is Unpredicted, with why, so that one showing
// contradicts unless x names it (verdict.Compare). A double grant x
// expects brings its consequences with it, as one a rule predicts does.
func (e Expectations) Predict(x verdict.Expectation, a impls.Approach, kinds []string, w workload.Spec) verdict.Expectation {
	expected := slices.Concat(x.Outcomes, x.May)
	x.Unpredicted = map[verdict.Outcome]string{}
	for _, c := range verdict.UnsafeOutcomes() {
		if c.FollowsFrom(expected) {
			continue
		}
		if j := e.Judge(a, kinds, w, c); !j.Known {
			x.Unpredicted[c] = j.Why
		}
	}
	return x
}

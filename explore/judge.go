package explore

import (
	"fmt"
	"slices"
	"time"

	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// examine and finding judge what exploring runs showed: each class of
// violation becomes a finding, known (a rule predicts it) or new, or
// another sighting of one.

// examine looks at what exploring run n (case name, of schedule s)
// showed: the steering's feedback, and its findings.
func (e *explorer) examine(srch *Search, s Schedule, n int, name string, res runner.CaseResult) error {
	srch.searcher.Feedback(n, s, transitions(res.Events))
	if res.Verdict.LabStalled {
		e.res.Stalled++
		return nil
	}
	ss := sightingsOf(res, verdict.FreeingOf(srch.approach, s.Workload.TTL))
	primary, also := primaries(ss)
	kinds := faultKinds(res.Events)
	if len(kinds) == 0 {
		kinds = s.Kinds()
	}
	allKnown := true
	for _, p := range primary {
		// One finding per class and approach, and per judgement: a class
		// known under some faults and new under others is two findings.
		j, mech := e.judge(srch, kinds, s.Workload, p.Class, p.Mechanism, p.InLease)
		allKnown = allKnown && j.Known
		if j.Known {
			e.queueUnmask(srch, p.Class, s, j.Because, n)
		}
		if f := e.finding(srch.Approach, p.Class, j.Known); f != nil {
			if f.seenAgain(s) {
				if err := e.writeFound(f); err != nil {
					return err
				}
			}
			continue
		}
		f := &Finding{Approach: srch.Approach, Class: p.Class, Known: j.Known, Why: j.Why, Run: n, After: time.Since(e.start),
			Case: name, Seen: 1, Proof: p.Proof, Stated: p.Stated, Mechanism: mech, Original: s, hits: 1, tries: 1,
			inLease: p.InLease && !j.Known}
		for _, a := range also {
			f.Also = append(f.Also, a.Class)
		}
		e.res.Findings = append(e.res.Findings, f)
		if err := e.writeFound(f); err != nil {
			return err
		}
	}
	// A consequence no rule predicts, beside a double grant a rule does
	// predict, is a finding of its own (a fenced store that lost an
	// update); beside a new one, it is part of that one.
	for _, a := range also {
		if !allKnown {
			break
		}
		if f := e.finding(srch.Approach, a.Class, false); f != nil {
			f.Seen++
			continue
		}
		if j := e.cfg.Expect.Judge(srch.approach, kinds, s.Workload, a.Class); !j.Known {
			f := &Finding{Approach: srch.Approach, Class: a.Class, Why: j.Why, Run: n, After: time.Since(e.start),
				Case: name, Seen: 1, Proof: a.Proof, Stated: a.Stated, Original: s, hits: 1, tries: 1}
			e.res.Findings = append(e.res.Findings, f)
			if err := e.writeFound(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// judge is the matrix's judgement of class c of srch's approach under
// fault kinds and workload w, and the mechanism (of its sighting's double
// grant) that makes a known class new: one no entry of the matrix's
// mechanisms gives the approach ("" when none does).
func (e *explorer) judge(srch *Search, kinds []string, w workload.Spec, c verdict.Outcome, mechanism string, inLease bool) (matrix.Judgement, string) {
	clock := inLease && contains(kinds, clientClock)
	if clock {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == clientClock })
	}
	j := e.cfg.Expect.Judge(srch.approach, kinds, w, c)
	if clock && !j.Known {
		j.Why = "granted while the first holder's lease, as it stood at its grant, had time left: a client clock moved " +
			"after explains a double grant only through a holder believing in a lease past its end (the rest: " + j.Why + ")"
	}
	if !j.Known || mechanism == "" || e.cfg.Expect.M == nil {
		return j, ""
	}
	if e.cfg.Expect.M.Shows(srch.approach, mechanism) {
		return j, ""
	}
	return matrix.Judgement{Why: fmt.Sprintf("its double grant came about by %s, which no entry of matrix/expectations.yaml's mechanisms gives %s (the class alone: %s)",
		mechanism, srch.Approach, j.Why)}, mechanism
}

func (e *explorer) finding(approach string, c verdict.Outcome, known bool) *Finding {
	for _, f := range e.res.Findings {
		if f.Approach == approach && f.Class == c && f.Known == known {
			return f
		}
	}
	return nil
}

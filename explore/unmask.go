package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/verdict"
)

// Unmasking: a known class can hide a new one. A lock that answers "held"
// from a stale cache after any lost lease shows a double grant under a
// server restart (which a rule predicts) and under a pause (which none
// does); a run with both faults is known. Such a run is run again without
// the faults its rules spoke for.

// unmasking is a known class to run again without the faults whose rules
// predicted it.
type unmasking struct {
	srch  *Search
	class verdict.Outcome
	s     Schedule
	run   int // the exploring run that showed it
}

// maxUnmask bounds the unmaskings of one class of one approach explained
// by one set of faults: runs a restart truly explains do not spend those
// of a run a clock fault seemed to explain.
const maxUnmask = 3

// queueUnmask queues run n's schedule s, which showed class c known by
// the rules of columns of fault kinds because, to run again without those
// faults: if c still shows, no rule predicted what the others did (a
// planted cache that answers "held" after any lost lease shows a double
// grant under a server restart, which a rule predicts, and under a pause,
// which none does).
func (e *explorer) queueUnmask(srch *Search, c verdict.Outcome, s Schedule, because []string, n int) {
	if len(because) == 0 {
		return
	}
	rest := s.Clone()
	rest.Faults = slices.DeleteFunc(rest.Faults, func(f Fault) bool { return contains(because, matrix.Mechanism(f.Kind)) })
	if len(rest.Faults) == 0 || len(rest.Faults) == len(s.Faults) {
		return
	}
	explained := slices.Clone(because)
	slices.Sort(explained)
	key := srch.Approach + " " + string(c) + " without " + strings.Join(explained, ",")
	what := key + ": " + rest.Summary()
	if e.tried[key] >= maxUnmask || e.tried[what] > 0 {
		return
	}
	e.tried[key]++
	e.tried[what]++
	e.unmasks = append(e.unmasks, unmasking{srch: srch, class: c, s: rest, run: n})
}

// unmask runs a known class's schedule without the faults its rules spoke
// for; if most runs still show it and no rule predicts it under what is
// left, it is a new finding.
func (e *explorer) unmask(ctx context.Context, u unmasking) error {
	if e.finding(u.srch.Approach, u.class, false) != nil {
		return nil // already known to be new
	}
	sh := e.shrinker(u.srch, u.class, "", "", false, fmt.Sprintf("u%d-", u.run), "unmasking")
	out, err := sh.Reproduce(ctx, u.s)
	if err != nil || !out.Confirmed {
		return err
	}
	j := e.cfg.Expect.Judge(u.srch.approach, u.s.Kinds(), u.s.Workload, u.class)
	if j.Known {
		return nil
	}
	f := &Finding{Approach: u.srch.Approach, Class: u.class, Why: j.Why, Run: u.run, After: time.Since(e.start),
		Case: out.Last.Case, Seen: 1, Proof: out.Last.Proof, Stated: out.Last.Stated, Original: u.s, Unmasked: true,
		hits: out.Hits, tries: out.Tries}
	e.res.Findings = append(e.res.Findings, f)
	return e.writeFound(f)
}

package explore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/workload"
)

// minCut is the smallest length or option value a shrink halves further.
const minCut = 100 * time.Millisecond

// candidate is one smaller schedule a shrink tries, and what changed.
type candidate struct {
	what string
	s    Schedule
	// cut: a time or an option made smaller (not a fault, client, key or
	// workload setting taken away). A cut must show the violation in every
	// run it is given, not most: halving a length until it stops showing
	// drives a schedule to the edge where it shows in half its runs (a
	// pause shrunk to 900 ms against a 1 s lease, kept 2 of 3, then shown
	// in 2 of 5), and the file would not reproduce.
	cut bool
}

// candidates are the smaller schedules to try next: the cuts of time
// first (every fault moved earlier, the run shortened), which make every
// later run cheaper; then a fault dropped, a client or a key fewer, a
// random client named, the workload made plainer, each fault shortened
// and its options halved.
func (sh *Shrinker) candidates(s Schedule) []candidate {
	scale := time.Second
	if sh.Scale != nil {
		scale = sh.Scale(s.Workload)
	}
	var l candidateList
	l.earlier(s, scale)
	l.fewer(s)
	l.namedClients(s)
	l.plainer(s)
	l.shorter(s)
	return l
}

// candidateList collects candidates in the order they are tried.
type candidateList []candidate

// add is a candidate that takes something away; cut one that makes a
// time or an option smaller.
func (l *candidateList) add(what string, s Schedule) { *l = append(*l, candidate{what: what, s: s}) }
func (l *candidateList) cut(what string, s Schedule) {
	*l = append(*l, candidate{what: what, s: s, cut: true})
}

// earlier: everything earlier (the faults start soon after the clients,
// and the run is shorter by as much), and a shorter run, down to a time
// scale after the last fault's end.
func (l *candidateList) earlier(s Schedule, scale time.Duration) {
	lastEnd := time.Duration(0)
	for _, f := range s.Faults {
		lastEnd = max(lastEnd, f.End())
	}
	if first := firstAt(s); first > 2*edge/5+grain {
		shift := first - 2*edge/5
		c := s.Clone()
		for i := range c.Faults {
			c.Faults[i].At -= shift
		}
		c.Duration -= shift
		l.cut(fmt.Sprintf("everything %v earlier", shift), c)
	}
	if d := round(max(s.Duration/2, lastEnd+scale)); d < s.Duration-grain {
		c := s.Clone()
		c.Duration = d
		l.cut(fmt.Sprintf("ran %v instead of %v", d, s.Duration), c)
	}
}

// fewer: a fault dropped, fewer clients, one key.
func (l *candidateList) fewer(s Schedule) {
	for i, f := range s.Faults {
		c := s.Clone()
		c.Faults = slices.Delete(c.Faults, i, i+1)
		l.add(fmt.Sprintf("dropped %s on %s", f.Kind, f.Target), c)
	}
	if s.Workload.Clients > minClients {
		// Two clients are the fewest a double grant needs: tried at once.
		c := s.Clone()
		c.Workload.Clients = minClients
		l.add(fmt.Sprintf("%d clients instead of %d", minClients, s.Workload.Clients), c)
	}
	if s.Workload.Clients > minClients+1 {
		c := s.Clone()
		c.Workload.Clients--
		l.add(fmt.Sprintf("%d clients instead of %d", c.Workload.Clients, s.Workload.Clients), c)
	}
	if s.Workload.Keys > 1 {
		c := s.Clone()
		c.Workload.Keys = 1
		l.add("one key", c)
	}
}

// namedClients: a random client named. Each run (its own seed) draws its
// own random client, and a file whose fault lands on the one that matters
// only some of the time reproduces only some of the time. Naming one is
// worth it only if it shows every time (a client hang named on client 0,
// kept with 2 of 3, where the random one had shown 5 of 5): a cut, kept
// only if it shows in every run, more surely than the random client did.
func (l *candidateList) namedClients(s Schedule) {
	for i, f := range s.Faults {
		if f.Target.Client != chaos.ClientRandom {
			continue
		}
		for k := range s.Workload.Clients {
			c := s.Clone()
			c.Faults[i].Target.Client = strconv.Itoa(k)
			l.cut(fmt.Sprintf("%s on client %d, not a random one", f.Kind, k), c)
		}
	}
}

// plainer: the workload's extras taken away, all at once first, then one
// by one if that was too much.
func (l *candidateList) plainer(s Schedule) {
	w := s.Workload
	plainer := []struct {
		on   bool
		what string
		off  func(*workload.Spec)
	}{
		{w.Kind != workload.Mutex, "a plain mutex workload", func(w *workload.Spec) { w.Kind, w.Fenced = workload.Mutex, false }},
		{w.Renew, "no renewal", func(w *workload.Spec) { w.Renew = false }},
		{w.HonourLease, "a holder that ignores its lease", func(w *workload.Spec) { w.HonourLease = false }},
		{w.Fenced, "unfenced writes", func(w *workload.Spec) { w.Fenced = false }},
		{thinks(w), "no think time", func(w *workload.Spec) { w.Think = workload.Dist{} }},
		{w.Reentry > 0, "no re-entry", func(w *workload.Spec) { w.Reentry = 0 }},
	}
	all, n := s.Clone(), 0
	var whats []string
	for _, p := range plainer {
		if p.on {
			p.off(&all.Workload)
			whats = append(whats, p.what)
			n++
		}
	}
	if n > 1 {
		l.add(strings.Join(whats, ", "), all)
	}
	for _, p := range plainer {
		if p.on {
			c := s.Clone()
			p.off(&c.Workload)
			l.add(p.what, c)
		}
	}
}

// shorter: each fault for half as long, and each of its duration options
// halved.
func (l *candidateList) shorter(s Schedule) {
	for i, f := range s.Faults {
		if f.For > minCut {
			c := s.Clone()
			c.Faults[i].For = round(f.For / 2)
			l.cut(fmt.Sprintf("%s for %v instead of %v", f.Kind, c.Faults[i].For, f.For), c)
		}
		for _, p := range f.Params {
			if v, ok := halve(p.Value); ok {
				c := s.Clone()
				c.Faults[i].SetParam(p.Name, v)
				l.cut(fmt.Sprintf("%s %s %s instead of %s", f.Kind, p.Name, v, p.Value), c)
			}
		}
	}
}

// halve halves a duration option ("400ms" -> "200ms") larger than minCut;
// other values are left alone.
func halve(v string) (string, bool) {
	d, err := time.ParseDuration(v)
	if err != nil || d.Abs() <= minCut {
		return "", false
	}
	return scenario.FormatDuration(round(d / 2)), true
}

// firstAt is when the schedule's first fault starts (0 without faults).
func firstAt(s Schedule) time.Duration {
	if len(s.Faults) == 0 {
		return 0
	}
	first := s.Faults[0].At
	for _, f := range s.Faults {
		first = min(first, f.At)
	}
	return first
}

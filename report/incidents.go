package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/verdict"
)

// Incident is one episode of one class of violation: the double grants
// that broke into one holder's tenure, or that followed each other with
// less than episodeGap between them (a paused holder outlived by every
// grant made while it slept is one incident, not one per grant; so is the
// cascade a plain DEL starts when it wakes), or the violations of another
// class that follow each other so.
type Incident struct {
	Class verdict.Outcome
	// Held are the clients whose tenures the double grants broke into
	// (none: not a double grant); Procs are the clients granted meanwhile,
	// or, for another class, the clients whose events they are; sorted.
	Held       []int
	Procs      []int
	Start, End int64 // CLOCK_MONOTONIC ns
	Count      int
	Events     []int64 // the first violation's events
	tenures    []int64 // the grants of the tenures broken into
}

// episodeGap parts incidents.
const episodeGap = time.Second

// Placer gives an event's time and client by its index (false: unknown).
type Placer func(index int64) (t int64, proc int, ok bool)

// Incidents groups v's violations into incidents, in order of their start;
// at places events in time, end is the history's last time (a tenure never
// released runs to it).
func Incidents(v checker.Verdict, at Placer, end int64) []Incident {
	var out []Incident
	grants := slices.Clone(v.DoubleGrants)
	slices.SortStableFunc(grants, func(a, b checker.DoubleGrant) int { return cmp.Compare(a.Second.Start, b.Second.Start) })
	open := map[string]int{}
	for _, d := range grants {
		c := verdict.OutcomeOf(d.Class())
		key := string(c) + " " + d.Key
		until := min(d.Held.End, d.Second.End, end)
		i, ok := open[key]
		if !ok || !slices.Contains(out[i].tenures, d.Held.StartIndex) && d.Second.Start-out[i].End >= int64(episodeGap) {
			i = len(out)
			open[key] = i
			out = append(out, Incident{Class: c, Start: d.Second.Start, End: until, Events: d.Events()})
		}
		in := &out[i]
		in.Count++
		in.Start, in.End = min(in.Start, d.Second.Start), max(in.End, until)
		in.Held, in.Procs = addProc(in.Held, d.Held.Proc), addProc(in.Procs, d.Second.Proc)
		if !slices.Contains(in.tenures, d.Held.StartIndex) {
			in.tenures = append(in.tenures, d.Held.StartIndex)
		}
	}
	last := map[verdict.Outcome]int{}
	for _, x := range v.Violations {
		c := verdict.OutcomeOf(x.Kind)
		if c.IsDoubleGrant() {
			continue
		}
		var from, to int64
		var procs []int
		placed := false
		for _, e := range x.Events {
			t, p, ok := at(e)
			if !ok {
				continue
			}
			if !placed {
				from, to, placed = t, t, true
			}
			from, to = min(from, t), max(to, t)
			procs = addProc(procs, p)
		}
		if i, ok := last[c]; ok && placed && from-out[i].End < int64(episodeGap) {
			in := &out[i]
			in.Count++
			in.Start, in.End = min(in.Start, from), max(in.End, to)
			for _, p := range procs {
				in.Procs = addProc(in.Procs, p)
			}
			continue
		}
		last[c] = len(out)
		out = append(out, Incident{Class: c, Procs: procs, Start: from, End: to, Count: 1, Events: x.Events})
	}
	for i := range out {
		slices.Sort(out[i].Held)
		slices.Sort(out[i].Procs)
	}
	slices.SortStableFunc(out, func(a, b Incident) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// IncidentLines are incidents in words, one line each: those of the
// deciding classes first (every one of them), then the others, at most
// most of those (then how many more of each class). origin is time zero;
// faults are the case's faults, to say which was in force.
func IncidentLines(incidents []Incident, deciding []verdict.Outcome, faults []Fault, origin int64, most int) (decided, rest []string) {
	var others []Incident
	for _, in := range incidents {
		if slices.Contains(deciding, in.Class) {
			decided = append(decided, in.line(faults, origin))
		} else {
			others = append(others, in)
		}
	}
	more := map[verdict.Outcome]int{}
	var order []verdict.Outcome
	for i, in := range others {
		if i < most {
			rest = append(rest, in.line(faults, origin))
			continue
		}
		if more[in.Class] == 0 {
			order = append(order, in.Class)
		}
		more[in.Class]++
	}
	for _, c := range order {
		rest = append(rest, fmt.Sprintf("%s: %d more incident(s)", c, more[c]))
	}
	return decided, rest
}

// line is one incident in words: its class, who, when and for how long,
// how many violations, the first one's events, and the fault in force.
func (in Incident) line(faults []Fault, origin int64) string {
	sec := func(t int64) float64 { return time.Duration(t - origin).Seconds() }
	who := clients(in.Procs)
	if len(in.Held) > 0 {
		who = fmt.Sprintf("held by %s, granted to %s", clients(in.Held), clients(in.Procs))
	}
	evs := make([]string, len(in.Events))
	for i, e := range in.Events {
		evs[i] = fmt.Sprint(e)
	}
	return fmt.Sprintf("%s: %s, at %.2f s for %.2f s, %d time(s) (events %s); %s", in.Class, who, sec(in.Start),
		time.Duration(in.End-in.Start).Seconds(), in.Count, strings.Join(evs, ", "), inForce(faults, sec(in.Start), sec(in.End)))
}

func addProc(procs []int, p int) []int {
	if slices.Contains(procs, p) {
		return procs
	}
	return append(procs, p)
}

// clients names clients by number: "client 2", "clients 1, 3".
func clients(procs []int) string {
	s := make([]string, len(procs))
	for i, p := range procs {
		s[i] = fmt.Sprint(p)
	}
	if len(s) == 1 {
		return "client " + s[0]
	}
	return "clients " + strings.Join(s, ", ")
}

// inForce names the faults in force between from and to (seconds), else
// the last one healed before, else none.
func inForce(faults []Fault, from, to float64) string {
	var on []string
	var before *Fault
	for i, f := range faults {
		if f.Error != "" {
			continue
		}
		end := f.At + f.For
		if f.For == 0 {
			end = to + 1 // in place until the end
		}
		switch {
		case f.At <= to && from <= end:
			on = append(on, fmt.Sprintf("%s on %s (%.2f s to %.2f s)", f.Fault, f.Target, f.At, end))
		case end < from && (before == nil || end > before.At+before.For):
			before = &faults[i]
		}
	}
	switch {
	case len(on) > 0:
		return "during " + strings.Join(on, ", ")
	case before != nil:
		return fmt.Sprintf("after %s on %s (healed %.2f s before)", before.Fault, before.Target, from-(before.At+before.For))
	}
	return "no fault in force"
}

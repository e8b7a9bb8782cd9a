package report

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

// TimelineData is what the interactive timeline draws, built from a case's
// history and verdict (Timeline.Data) and embedded in its page as JSON: the
// page's script only draws it. Times are microseconds after the origin.
type TimelineData struct {
	Title string `json:"title"`
	Span  int64  `json:"span"` // the history's length
	// Lanes are the clients (or the keys, when there are too many
	// clients for a lane each), in order.
	Lanes []TimelineLane `json:"lanes"`
	Keys  []string       `json:"keys"`
	Holds []TimelineHold `json:"holds"`
	// Merged counts the holds merged into their neighbours on a lane to
	// keep the page small (0: every hold is its own).
	Merged    int                 `json:"merged,omitempty"`
	Faults    []TimelineFault     `json:"faults"`
	Stalls    []TimelineFault     `json:"stalls"`
	Overlaps  []TimelineOverlap   `json:"overlaps"`
	Incidents []TimelineIncident  `json:"incidents"`
	Viols     []TimelineViolation `json:"violations"`
	// ViolsCut counts violations left out of Viols (their incidents
	// still count them).
	ViolsCut int `json:"violations_cut,omitempty"`
	// History is the page that shows the history's lines, each anchored
	// "#i<index>" ("" none); HistoryFile is the file those lines are from.
	History     string `json:"history,omitempty"`
	HistoryFile string `json:"history_file,omitempty"`
}

// TimelineLane is one lane: a client of the case (the slot faults name as
// "client N", whatever processes it ran as), a process when the slots are
// unknown, or a key.
type TimelineLane struct {
	Name  string `json:"name"`
	Procs []int  `json:"procs,omitempty"` // the process ids that ran on it
}

// TimelineHold is one tenure: a holder from its grant to its release's
// invocation (or the end of the history: Open).
type TimelineHold struct {
	Lane  int   `json:"l"`
	Key   int   `json:"k"` // index into Keys
	Proc  int   `json:"p"`
	Start int64 `json:"s"`
	End   int64 `json:"e"`
	Open  bool  `json:"o,omitempty"`
	// Expiry is when the holder believed its lease ran out, as it last
	// knew (the grant's, or a renewal's); -1: no lease known.
	Expiry  int64 `json:"x"`
	Grant   int64 `json:"g"` // the acquire ok's index; -1 for merged holds
	Release int64 `json:"r"` // the release invoke's index; -1 none
	// N is how many holds this one stands for (merged); 0 or 1: itself.
	N int `json:"n,omitempty"`
}

// TimelineFault is a fault's window (or a stall of the lab), on the lanes
// it hit: a client's fault on that client's lane, a server's on all.
type TimelineFault struct {
	Fault  string `json:"fault"`
	Target string `json:"target,omitempty"`
	Start  int64  `json:"s"`
	End    int64  `json:"e"`
	Open   bool   `json:"o,omitempty"` // never healed within the history
	Lanes  []int  `json:"lanes"`       // nil: every lane; empty: a client without a lane here
}

// TimelineOverlap is the stretch of a double grant in which both held.
type TimelineOverlap struct {
	Lanes [2]int `json:"lanes"` // the earlier holder's, the second's (-1: not drawn)
	Start int64  `json:"s"`
	End   int64  `json:"e"`
	Class string `json:"class"`
}

// TimelineViolation is one violation with its events placed.
type TimelineViolation struct {
	Class    string          `json:"class"`
	Key      string          `json:"key,omitempty"`
	Text     string          `json:"text"`
	Start    int64           `json:"s"` // its first event
	End      int64           `json:"e"` // its last
	Events   []TimelineEvent `json:"events"`
	Incident int             `json:"incident"`
}

// TimelineEvent is an event a violation names: its index, the line of the
// history file it is on (index + 1), when, on which lane.
type TimelineEvent struct {
	Index int64  `json:"i"`
	Line  int64  `json:"line"`
	T     int64  `json:"t"` // -1: not known
	Lane  int    `json:"l"` // -1: none
	What  string `json:"what,omitempty"`
}

// TimelineIncident is the violations whose spans touch, one marker: the
// double grants of one pause, their lost updates and revocations.
type TimelineIncident struct {
	Start   int64          `json:"s"`
	End     int64          `json:"e"`
	Count   int            `json:"count"`
	Classes []ClassCount   `json:"classes"`
	Lanes   []int          `json:"lanes"`
	Faults  []int          `json:"faults"` // indices into Faults overlapping it
	Viols   []int          `json:"violations"`
	Cut     int            `json:"cut,omitempty"` // its violations not in Viols
	classes map[string]int // while building
}

// ClassCount is how many violations of a class.
type ClassCount struct {
	Class string `json:"class"`
	N     int    `json:"n"`
}

// Limits of the page's data, so a long busy run's page stays a few MB.
const (
	maxPageHolds      = 60_000
	maxPageViolations = 2_000
	maxPageLanes      = 128
	// incidentGap joins violations closer than this (µs) into one
	// incident, beyond the overlap of their spans.
	incidentGap = 100_000
)

var (
	targetClient  = regexp.MustCompile(`^client (\d+)\b`)
	targetProcess = regexp.MustCompile(`\(process (\d+)\)`)
)

// pageLanes are the page's lanes and the lane of a process (-1: none):
// a lane per slot when Slot says which, else a lane per process, or a lane
// per key when there are more than limit of those.
func (tl *Timeline) pageLanes(limit int) (lanes []TimelineLane, laneOfProc func(int) int, laneOfKey func(string) int, slotLane map[int]int) {
	procs := tl.clients()
	for _, p := range tl.Procs {
		procs[p] = true
	}
	var ps []int
	for p := range procs {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	ids := map[int]int{} // proc -> lane id (slot, or -1-proc)
	id := func(p int) int {
		if tl.Slot != nil {
			if s, ok := tl.Slot(p); ok {
				return s
			}
		}
		return -1 - p
	}
	distinct := map[int]bool{}
	for _, p := range ps {
		ids[p] = id(p)
		distinct[ids[p]] = true
	}
	if len(distinct) > limit {
		var keys []string
		for k := range tl.Intervals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		byKey := map[string]int{}
		for i, k := range keys {
			byKey[k] = i
			lanes = append(lanes, TimelineLane{Name: "key " + k})
		}
		return lanes, func(int) int { return -1 }, func(k string) int {
			if i, ok := byKey[k]; ok {
				return i
			}
			return -1
		}, nil
	}
	// Slots first in slot order, then processes with none.
	var order []int
	for d := range distinct {
		order = append(order, d)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if (a >= 0) != (b >= 0) {
			return a >= 0
		}
		if a >= 0 {
			return a < b
		}
		return a > b // -1-p: lower processes first
	})
	laneOfID := map[int]int{}
	slotLane = map[int]int{}
	for i, d := range order {
		laneOfID[d] = i
		name := fmt.Sprintf("client %d", d)
		if d < 0 {
			name = fmt.Sprintf("process %d", -1-d)
		} else {
			slotLane[d] = i
		}
		lanes = append(lanes, TimelineLane{Name: name})
	}
	for _, p := range ps {
		l := laneOfID[ids[p]]
		lanes[l].Procs = append(lanes[l].Procs, p)
	}
	laneOfProc = func(p int) int {
		d, ok := ids[p]
		if !ok {
			d = id(p)
		}
		if l, ok := laneOfID[d]; ok {
			return l
		}
		return -1
	}
	return lanes, laneOfProc, nil, slotLane
}

// Data builds the interactive timeline's data.
func (tl *Timeline) Data() TimelineData {
	us := func(t int64) int64 { return (t - tl.Origin) / 1000 }
	d := TimelineData{Title: tl.Title, Span: max(us(tl.End), 0), History: tl.History, HistoryFile: tl.HistoryFile,
		Faults: []TimelineFault{}, Stalls: []TimelineFault{}, Overlaps: []TimelineOverlap{}, Incidents: []TimelineIncident{},
		Viols: []TimelineViolation{}, Holds: []TimelineHold{}}
	lanes, laneOfProc, laneOfKey, slotLane := tl.pageLanes(maxPageLanes)
	d.Lanes = lanes
	laneOf := func(iv checker.Interval) int {
		if laneOfKey != nil {
			return laneOfKey(iv.Key)
		}
		return laneOfProc(iv.Proc)
	}
	for k := range tl.Intervals {
		d.Keys = append(d.Keys, k)
	}
	sort.Strings(d.Keys)
	keyIndex := map[string]int{}
	for i, k := range d.Keys {
		keyIndex[k] = i
	}
	// Holds, and what the page can say of the events that bound them.
	what := map[int64]string{}
	for _, k := range d.Keys {
		for _, iv := range tl.Intervals[k] {
			h := TimelineHold{Lane: laneOf(iv), Key: keyIndex[k], Proc: iv.Proc, Start: us(iv.Start), Expiry: -1,
				Grant: iv.StartIndex, Release: iv.EndIndex}
			if iv.End == checker.Open {
				h.End, h.Open, h.Release = us(tl.End), true, -1
			} else {
				h.End = us(iv.End)
			}
			if iv.ValidUntil != 0 {
				h.Expiry = us(iv.ValidUntil)
			}
			d.Holds = append(d.Holds, h)
			what[iv.StartIndex] = fmt.Sprintf("process %d granted %s", iv.Proc, k)
			if iv.EndIndex >= 0 {
				what[iv.EndIndex] = fmt.Sprintf("process %d releases %s", iv.Proc, k)
			}
		}
	}
	sort.Slice(d.Holds, func(i, j int) bool {
		a, b := d.Holds[i], d.Holds[j]
		if a.Lane != b.Lane {
			return a.Lane < b.Lane
		}
		return a.Start < b.Start
	})
	if len(d.Holds) > maxPageHolds {
		d.Holds, d.Merged = mergeHolds(d.Holds, d.Span)
	}
	// Faults on the lanes they hit.
	for _, w := range tl.Faults {
		f := TimelineFault{Fault: w.Label, Target: w.Target, Start: us(w.Start), End: us(w.End), Open: w.Open}
		f.Lanes = faultLanes(w.Target, slotLane, laneOfProc, laneOfKey != nil)
		d.Faults = append(d.Faults, f)
	}
	for _, w := range tl.Stalls {
		f := TimelineFault{Fault: "the lab stalled", Target: w.Label, Start: us(w.Start), End: us(w.End)}
		if p, ok := history.StallClient(w.Label); ok && laneOfKey == nil {
			if l := laneOfProc(p); l >= 0 {
				f.Lanes = []int{l}
			}
		}
		d.Stalls = append(d.Stalls, f)
	}
	for _, g := range tl.Grants {
		heldEnd, secEnd := g.Held.End, g.Second.End
		if heldEnd == checker.Open {
			heldEnd = tl.End
		}
		if secEnd == checker.Open {
			secEnd = tl.End
		}
		d.Overlaps = append(d.Overlaps, TimelineOverlap{Lanes: [2]int{laneOf(g.Held), laneOf(g.Second)},
			Start: us(g.Second.Start), End: us(max(min(heldEnd, secEnd), g.Second.Start)), Class: string(g.Class())})
	}
	d.addViolations(tl, us, laneOfProc, laneOfKey, what)
	return d
}

// faultLanes are the lanes a fault on target hit: the client's lane when
// it names a client, none when that client has no lane here (a history
// cut to one case's keys); nil (every lane) for what is not a client.
func faultLanes(target string, slotLane map[int]int, laneOfProc func(int) int, byKey bool) []int {
	mc, mp := targetClient.FindStringSubmatch(target), targetProcess.FindStringSubmatch(target)
	if byKey || (mc == nil && mp == nil) {
		return nil
	}
	if mc != nil {
		if s, err := strconv.Atoi(mc[1]); err == nil {
			if l, ok := slotLane[s]; ok {
				return []int{l}
			}
		}
	}
	if mp != nil {
		if p, err := strconv.Atoi(mp[1]); err == nil {
			if l := laneOfProc(p); l >= 0 {
				return []int{l}
			}
		}
	}
	return []int{}
}

// mergeHolds joins the holds of a lane closer than span/maxPageHolds*lanes
// apart, until they fit: what a screen could show of them anyway.
func mergeHolds(holds []TimelineHold, span int64) ([]TimelineHold, int) {
	gap := max(span/maxPageHolds, 1)
	for {
		out := make([]TimelineHold, 0, len(holds))
		for _, h := range holds {
			n := len(out)
			if n > 0 && out[n-1].Lane == h.Lane && h.Start-out[n-1].End <= gap {
				last := &out[n-1]
				last.End = max(last.End, h.End)
				last.Open = last.Open || h.Open
				last.N = max(last.N, 1) + max(h.N, 1)
				last.Grant, last.Release, last.Expiry = -1, -1, -1
				continue
			}
			out = append(out, h)
		}
		if len(out) <= maxPageHolds {
			return out, len(holds) - len(out)
		}
		gap *= 2
	}
}

// addViolations places each violation by its events and groups them into
// incidents: violations whose spans overlap, or come within incidentGap.
func (d *TimelineData) addViolations(tl *Timeline, us func(int64) int64, laneOfProc func(int) int, laneOfKey func(string) int, what map[int64]string) {
	type placed struct {
		v      checker.Violation
		start  int64
		end    int64
		events []TimelineEvent
		lanes  []int
	}
	var all []placed
	for _, v := range tl.Violations {
		p := placed{v: v, start: -1, end: -1}
		for _, i := range v.Events {
			ev := TimelineEvent{Index: i, Line: i + 1, T: -1, Lane: -1, What: what[i]}
			if tl.Event != nil {
				if t, proc, ok := tl.Event(i); ok {
					ev.T = us(t)
					switch {
					case laneOfKey != nil:
						ev.Lane = laneOfKey(v.Key)
					case proc >= 0:
						ev.Lane = laneOfProc(proc)
					}
					if ev.What == "" && proc >= 0 {
						ev.What = fmt.Sprintf("process %d", proc)
					}
				}
			}
			if ev.T >= 0 {
				if p.start < 0 || ev.T < p.start {
					p.start = ev.T
				}
				p.end = max(p.end, ev.T)
			}
			if ev.Lane >= 0 && !slices.Contains(p.lanes, ev.Lane) {
				p.lanes = append(p.lanes, ev.Lane)
			}
			p.events = append(p.events, ev)
		}
		if p.start < 0 { // nothing placed it: the end of the history
			p.start, p.end = d.Span, d.Span
		}
		all = append(all, p)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].start < all[j].start })
	for _, p := range all {
		n := len(d.Incidents)
		if n == 0 || p.start > d.Incidents[n-1].End+incidentGap {
			d.Incidents = append(d.Incidents, TimelineIncident{Start: p.start, End: p.end, classes: map[string]int{}})
			n++
		}
		inc := &d.Incidents[n-1]
		inc.End = max(inc.End, p.end)
		inc.Count++
		inc.classes[string(p.v.Kind)]++
		for _, l := range p.lanes {
			if !slices.Contains(inc.Lanes, l) {
				inc.Lanes = append(inc.Lanes, l)
			}
		}
		if len(d.Viols) >= maxPageViolations {
			d.ViolsCut++
			inc.Cut++
			continue
		}
		inc.Viols = append(inc.Viols, len(d.Viols))
		d.Viols = append(d.Viols, TimelineViolation{Class: string(p.v.Kind), Key: p.v.Key, Text: p.v.Text,
			Start: p.start, End: p.end, Events: p.events, Incident: n - 1})
	}
	for i := range d.Incidents {
		inc := &d.Incidents[i]
		for c, n := range inc.classes {
			inc.Classes = append(inc.Classes, ClassCount{Class: c, N: n})
		}
		sort.Slice(inc.Classes, func(a, b int) bool {
			if inc.Classes[a].N != inc.Classes[b].N {
				return inc.Classes[a].N > inc.Classes[b].N
			}
			return inc.Classes[a].Class < inc.Classes[b].Class
		})
		sort.Ints(inc.Lanes)
		inc.Faults = []int{}
		for fi, f := range d.Faults {
			if f.Start <= inc.End && f.End >= inc.Start-incidentGap {
				inc.Faults = append(inc.Faults, fi)
			}
		}
		if inc.Lanes == nil {
			inc.Lanes = []int{}
		}
		inc.classes = nil
	}
}

package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

const sec = int64(1e9)

// pausedCase is a case of three clients (slots 0, 1, 2 as processes 10,
// 11, 12; process 13 replaces slot 1): client 1 is paused from 1.2 s to
// 4 s while it holds k with a lease to 2 s, and client 2 is granted k
// twice meanwhile; later a server fault, during which process 13 is
// granted k while client 0's lease is still valid.
func pausedCase(t *testing.T) (*Timeline, []history.Event) {
	t.Helper()
	var evs []history.Event
	add := func(proc int, typ history.Type, f string, at float64, validUntil float64) {
		ev := history.Event{Index: int64(len(evs)), Proc: proc, Type: typ, F: f, Key: "k", T: int64(math.Round(at * float64(sec)))}
		if validUntil > 0 {
			ev.ValidUntil = int64(math.Round(validUntil * float64(sec)))
		}
		evs = append(evs, ev)
	}
	hold := func(proc int, from, to, lease float64) {
		add(proc, history.Invoke, history.Acquire, from-0.01, 0)
		add(proc, history.OK, history.Acquire, from, lease)
		add(proc, history.Invoke, history.Release, to, 0)
		add(proc, history.OK, history.Release, to+0.001, 0)
	}
	add(10, history.Invoke, history.Acquire, 0.09, 0)
	add(10, history.OK, history.Acquire, 0.1, 1.1)
	add(10, history.Invoke, history.Release, 0.5, 0)
	add(10, history.OK, history.Release, 0.501, 0)
	add(11, history.Invoke, history.Acquire, 0.99, 0)
	add(11, history.OK, history.Acquire, 1, 2) // paused at 1.2 s, lease to 2 s
	hold(12, 2.5, 2.6, 3.5)                    // granted while 11 still holds: outlived
	hold(12, 3.0, 3.1, 4.0)                    // again
	add(11, history.Invoke, history.Release, 4.1, 0)
	add(11, history.OK, history.Release, 4.101, 0)
	hold(13, 5, 5.5, 6) // slot 1's replacement
	add(10, history.Invoke, history.Acquire, 7.99, 0)
	add(10, history.OK, history.Acquire, 8, 9)
	hold(13, 8.5, 8.6, 9.5) // while 10's lease runs to 9 s: both valid
	add(10, history.Invoke, history.Release, 8.8, 0)
	add(10, history.OK, history.Release, 8.801, 0)
	c := checker.New(checker.ModelLease, false)
	for _, ev := range evs {
		c.Add(ev)
	}
	v := c.Snapshot()
	slots := map[int]int{10: 0, 11: 1, 12: 2, 13: 1}
	byIndex := map[int64]history.Event{}
	for _, ev := range evs {
		byIndex[ev.Index] = ev
	}
	return &Timeline{Title: "paused", Origin: 0, End: 10 * sec, Intervals: c.Intervals(), Grants: v.DoubleGrants,
		Faults: []Window{
			{Start: 1.2e9, End: 4e9, Label: "client-pause", Target: "client 1 (process 11)"},
			{Start: 7.5e9, End: 8.7e9, Label: "server-kill", Target: "redis-1"},
			{Start: 9.5e9, End: 10e9, Label: "partition-client", Target: "client 2", Open: true},
		},
		Stalls:     []Window{{Start: 6e9, End: 6.2e9, Label: "worker 12"}, {Start: 7e9, End: 7.1e9, Label: "locklab"}},
		Slot:       func(p int) (int, bool) { s, ok := slots[p]; return s, ok },
		Procs:      []int{10, 11, 12},
		Violations: v.Violations,
		Event: func(i int64) (int64, int, bool) {
			ev, ok := byIndex[i]
			return ev.T, ev.Proc, ok
		},
		History: "history-paused.html", HistoryFile: "history.jsonl"}, evs
}

func TestTimelineDataLanesAreTheCaseClients(t *testing.T) {
	tl, _ := pausedCase(t)
	d := tl.Data()
	var names []string
	for _, l := range d.Lanes {
		names = append(names, l.Name)
	}
	if want := []string{"client 0", "client 1", "client 2"}; !slices.Equal(names, want) {
		t.Fatalf("lanes %q, want %q (slots, not process ids)", names, want)
	}
	if !slices.Equal(d.Lanes[1].Procs, []int{11, 13}) {
		t.Errorf("client 1's processes %v, want [11 13] (the replacement on its slot's lane)", d.Lanes[1].Procs)
	}
	for _, h := range d.Holds {
		want := map[int]int{10: 0, 11: 1, 12: 2, 13: 1}[h.Proc]
		if h.Lane != want {
			t.Errorf("process %d's hold on lane %d, want %d", h.Proc, h.Lane, want)
		}
	}
	// Without slots (a history from elsewhere), a lane per process.
	tl.Slot = nil
	d = tl.Data()
	if len(d.Lanes) != 4 || d.Lanes[0].Name != "process 10" || d.Lanes[3].Name != "process 13" {
		t.Errorf("lanes without slots: %+v, want process 10..13", d.Lanes)
	}
}

func TestTimelineDataFaultsOnTheLanesTheyHit(t *testing.T) {
	tl, _ := pausedCase(t)
	d := tl.Data()
	want := []struct {
		fault string
		lanes []int
	}{{"client-pause", []int{1}}, {"server-kill", nil}, {"partition-client", []int{2}}}
	if len(d.Faults) != len(want) {
		t.Fatalf("%d faults, want %d", len(d.Faults), len(want))
	}
	for i, w := range want {
		f := d.Faults[i]
		if f.Fault != w.fault || !slices.Equal(f.Lanes, w.lanes) {
			t.Errorf("fault %d: %s on lanes %v, want %s on %v (nil: every lane)", i, f.Fault, f.Lanes, w.fault, w.lanes)
		}
	}
	if d.Faults[0].Start != 1_200_000 || d.Faults[0].End != 4_000_000 || d.Faults[0].Target != "client 1 (process 11)" {
		t.Errorf("the pause: %+v, want 1.2 s to 4 s on client 1 (process 11)", d.Faults[0])
	}
	if !d.Faults[2].Open {
		t.Error("a fault never healed must say so")
	}
	// A worker's stall on its client's lane, locklab's on every lane.
	if !slices.Equal(d.Stalls[0].Lanes, []int{2}) || d.Stalls[1].Lanes != nil {
		t.Errorf("stalls on lanes %v and %v, want [2] and every lane", d.Stalls[0].Lanes, d.Stalls[1].Lanes)
	}
	// Without slots, the pause is placed by its process.
	tl.Slot = nil
	if got := tl.Data().Faults[0].Lanes; !slices.Equal(got, []int{1}) {
		t.Errorf("without slots the pause of process 11 is on lanes %v, want [1]", got)
	}
	// A pause of a client without a lane here is on none, not on all.
	tl.Faults = []Window{{Start: 1, End: 2, Label: "client-pause", Target: "client 7 (process 77)"}}
	if got := tl.Data().Faults[0].Lanes; got == nil || len(got) != 0 {
		t.Errorf("the pause of a client without a lane is on lanes %v, want none", got)
	}
}

func TestTimelineDataLeaseExpiry(t *testing.T) {
	tl, _ := pausedCase(t)
	d := tl.Data()
	var paused *TimelineHold
	for i, h := range d.Holds {
		if h.Proc == 11 {
			paused = &d.Holds[i]
		}
	}
	if paused == nil {
		t.Fatal("no hold of process 11")
	}
	if paused.Start != 1_000_000 || paused.End != 4_100_000 || paused.Expiry != 2_000_000 {
		t.Errorf("the paused hold %+v: want from 1 s to 4.1 s, its lease to 2 s", *paused)
	}
	if paused.Grant != 5 || paused.Release != 14 {
		t.Errorf("the paused hold's events %d, %d; want 5 (grant), 14 (release)", paused.Grant, paused.Release)
	}
	// A hold without a lease says so; an open one runs to the end.
	tl.Intervals = map[string][]checker.Interval{"k": {{Key: "k", Proc: 10, Start: 1 * sec, End: checker.Open, StartIndex: 0, EndIndex: -1}}}
	h := tl.Data().Holds[0]
	if h.Expiry != -1 || !h.Open || h.End != 10_000_000 || h.Release != -1 {
		t.Errorf("an open hold without a lease: %+v", h)
	}
}

func TestTimelineDataViolationIncidents(t *testing.T) {
	tl, _ := pausedCase(t)
	d := tl.Data()
	if len(tl.Violations) < 3 {
		t.Fatalf("the case has %d violations, want the pause's two double grants and the both-valid one", len(tl.Violations))
	}
	if len(d.Incidents) != 2 {
		t.Fatalf("%d incidents, want 2 (the pause, the server fault): %+v", len(d.Incidents), d.Incidents)
	}
	pause, server := d.Incidents[0], d.Incidents[1]
	if pause.Count != 2 || len(pause.Classes) != 1 || pause.Classes[0] != (ClassCount{string(checker.DoubleGrantOutlived), 2}) {
		t.Errorf("the pause's incident: %d violations %+v, want 2 %s", pause.Count, pause.Classes, checker.DoubleGrantOutlived)
	}
	if !slices.Equal(pause.Faults, []int{0}) || !slices.Equal(pause.Lanes, []int{1, 2}) {
		t.Errorf("the pause's incident during faults %v on lanes %v, want [0] (the pause) on [1 2]", pause.Faults, pause.Lanes)
	}
	if pause.Start != 1_000_000 || pause.End != 3_000_000 {
		t.Errorf("the pause's incident from %d to %d µs, want from the paused grant (1 s) to the last second grant (3 s)", pause.Start, pause.End)
	}
	if server.Classes[0].Class != string(checker.DoubleGrantBothValid) || !slices.Equal(server.Faults, []int{1}) {
		t.Errorf("the second incident: %+v during %v, want a both-valid double grant during the server fault", server.Classes, server.Faults)
	}
	for n, inc := range d.Incidents {
		for _, vi := range inc.Viols {
			if d.Viols[vi].Incident != n {
				t.Errorf("violation %d lists incident %d, is in %d", vi, d.Viols[vi].Incident, n)
			}
		}
	}
}

func TestTimelineDataLinksEventsToHistoryLines(t *testing.T) {
	tl, evs := pausedCase(t)
	d := tl.Data()
	if d.History != "history-paused.html" || d.HistoryFile != "history.jsonl" {
		t.Errorf("history %q in %q", d.History, d.HistoryFile)
	}
	for _, v := range d.Viols {
		if len(v.Events) == 0 {
			t.Errorf("%s: no events", v.Text)
		}
		for _, ev := range v.Events {
			if ev.Line != ev.Index+1 {
				t.Errorf("event %d on line %d, want %d", ev.Index, ev.Line, ev.Index+1)
			}
			src := evs[ev.Index]
			if ev.T != src.T/1000 {
				t.Errorf("event %d at %d µs, want %d", ev.Index, ev.T, src.T/1000)
			}
			if want := map[int]int{10: 0, 11: 1, 12: 2, 13: 1}[src.Proc]; ev.Lane != want {
				t.Errorf("event %d of process %d on lane %d, want %d", ev.Index, src.Proc, ev.Lane, want)
			}
			if ev.What == "" {
				t.Errorf("event %d says nothing of itself", ev.Index)
			}
		}
	}
}

func TestTimelineDataMergesAHugeRun(t *testing.T) {
	tl := busyTimeline()
	n := 0
	for _, ivs := range tl.Intervals {
		n += len(ivs)
	}
	d := tl.Data()
	if n <= maxPageHolds {
		t.Fatalf("the busy timeline has %d holds, no more than the page keeps", n)
	}
	if len(d.Holds) > maxPageHolds || d.Merged != n-len(d.Holds) {
		t.Errorf("%d holds kept of %d, %d merged", len(d.Holds), n, d.Merged)
	}
	sum := 0
	for _, h := range d.Holds {
		sum += max(h.N, 1)
	}
	if sum != n {
		t.Errorf("the kept holds stand for %d, want %d", sum, n)
	}
}

// The page is one file: its data parses back, nothing in it is fetched,
// and a violation's text cannot end its script.
func TestTimelinePageIsSelfContained(t *testing.T) {
	tl, _ := pausedCase(t)
	tl.Violations[0].Text += " </script><script>alert(1)</script>"
	b, err := TimelinePageHTML(CasePage(Run{Case: "paused", Approach: "x", Status: "contradicts", Explanation: "why"}, tl, []string{"timeline-paused.png"}))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, "</script>"); n != 2 {
		t.Errorf("%d </script> in the page, want 2 (the data's and the code's)", n)
	}
	for _, ref := range regexp.MustCompile(`(?:src|href)\s*=\s*["']?(?:https?:)?//[^"' >]+`).FindAllString(page, -1) {
		t.Errorf("the page fetches %s", ref)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data in the page")
	}
	var d TimelineData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("the page's data: %v", err)
	}
	if len(d.Incidents) != 2 || len(d.Lanes) != 3 {
		t.Errorf("the page's data has %d incidents, %d lanes", len(d.Incidents), len(d.Lanes))
	}
	if i, j := strings.Index(page, "contradicts"), strings.Index(page, `id="svg"`); i < 0 || j < i {
		t.Error("the page must open with the verdict, then the timeline")
	}
}

// A history page reads the lines of a plain or a zstd-compressed history.
func TestWriteHistoryPages(t *testing.T) {
	for _, name := range []string{"history.jsonl", history.FileName} {
		t.Run(name, func(t *testing.T) { testWriteHistoryPages(t, name) })
	}
}

func testWriteHistoryPages(t *testing.T, histName string) {
	dir := t.TempDir()
	w, err := history.Create(filepath.Join(dir, histName))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		w.Record(history.Event{Proc: i % 3, Type: history.OK, F: history.Acquire, Key: "<k>", T: int64(i)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	err = WriteHistoryPages(dir, histName, []HistoryPage{{Name: "history-a.html", Case: "a", Timeline: "timeline-a.html", Cited: []int64{5, 30}}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "history-a.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="l c" id="i5"><span class="n">6</span>{&#34;proc&#34;:2,`, `id="i2"`, `id="i8"`, `id="i33"`, `&lt;k&gt;`, `href="timeline-a.html"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, not := range []string{`id="i1"`, `id="i9"`, `id="i34"`, `"<k>"`} {
		if strings.Contains(string(page), not) {
			t.Errorf("the page has %s", not)
		}
	}
	if err := WriteHistoryPages(dir, "missing.jsonl", []HistoryPage{{Name: "x.html", Cited: []int64{1}}}); err == nil {
		t.Error("a missing history must be an error")
	}
}

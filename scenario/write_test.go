package scenario

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// entryOf is a fault of kind as a search draws it: each option its ranges
// sets (the last way of each choice), at the top of its range on a one-second scale, for its longest.
func entryOf(kind string, target chaos.Selector) Entry {
	f, _ := chaos.New(kind)
	r := chaos.RangesOf(f)
	e := Entry{Kind: kind, Target: target, At: 1500 * time.Millisecond, For: time.Duration(r.For.Hi * float64(time.Second))}
	for _, c := range r.Options {
		w := c.Ways[len(c.Ways)-1] // one way of each choice
		switch {
		case w.Option == "":
		case len(w.Values) > 0:
			e.SetParam(w.Option, w.Values[0])
		default:
			e.SetParam(w.Option, FormatDuration(max(time.Duration(w.Span.Hi*float64(time.Second)), w.Min)))
		}
	}
	return e
}

// drafts are representative schedules: each fault kind as a search draws
// it, and the shapes a writer must get right (a drift rate, a clock set
// back, a fault that waits for a holder, one client's links to named
// nodes, quoted names, a think time, an expectation).
func drafts() []Draft {
	w := workload.Spec{Kind: workload.Counter, Clients: 3, Keys: 2, Hold: workload.Dist{Kind: "uniform", A: 5 * time.Millisecond, B: 80 * time.Millisecond},
		TTL: time.Second, AcquireTimeout: 3 * time.Second, Fenced: true, Renew: true}
	var out []Draft
	for _, kind := range chaos.Kinds() {
		target := chaos.Selector{Node: chaos.NodeOne}
		if strings.HasPrefix(kind, "client-") {
			target = chaos.Selector{Client: chaos.ClientHolder, Key: "0"}
		}
		out = append(out, Draft{Name: "every-" + kind, Approach: "memory", Workload: w, Duration: 5 * time.Second, Seed: 7,
			Faults: []Entry{entryOf(kind, target)}})
	}
	careful := w
	careful.Kind, careful.Fenced, careful.Renew, careful.HonourLease = workload.Mutex, false, false, true
	careful.Think = workload.Dist{Kind: "uniform", A: 5 * time.Millisecond, B: 100 * time.Millisecond}
	careful.Reentry = 0.35
	out = append(out, Draft{Name: "shapes", Comment: []string{"what it shows,", "", "and why"}, Approach: "fenced-memory",
		Workload: careful, Duration: 6500 * time.Millisecond, Seed: 1 << 40, Expect: []string{"double-grant:outlived", "lost-update"},
		Faults: []Entry{
			{Kind: "client-clock", Params: []Param{{Name: "rate", Value: "-0.5"}}, Target: chaos.Selector{Client: chaos.ClientRandom}, At: 600 * time.Millisecond, For: 2 * time.Second},
			{Kind: "server-clock", Params: []Param{{Name: "offset", Value: "-1.5s"}}, Target: chaos.Selector{Node: chaos.NodeLeader, Server: "redis-sentinel"}, At: time.Second, For: time.Second},
			{Kind: "client-hang", Target: chaos.Selector{Client: chaos.ClientHolder, Key: "1"}, At: 2 * time.Second, When: "1", For: 900 * time.Millisecond},
			{Kind: "partition", Params: []Param{{Name: "mode", Value: "reset"}}, Target: chaos.Selector{Client: "1", Nodes: []string{"redis-3", "redis-4"}}, At: 3 * time.Second, For: time.Second},
			{Kind: "server-kill", Target: chaos.Selector{Node: "no"}, At: 4 * time.Second, For: 10 * time.Millisecond},
		}})
	return out
}

// Format writes what Parse reads: each draft, written and parsed back,
// is the scenario it describes.
func TestFormatRoundTrips(t *testing.T) {
	reg := registry()
	for _, d := range drafts() {
		b := Format(d)
		s, err := Parse(b, reg)
		if err != nil {
			t.Fatalf("%s does not read back: %v\n%s", d.Name, err, b)
		}
		if err := sameScenario(d, s); err != nil {
			t.Errorf("%s: %v\n%s", d.Name, err, b)
		}
	}
}

// sameScenario says how s differs from what d describes (nil: in nothing).
func sameScenario(d Draft, s *Scenario) error {
	switch {
	case s.Name != d.Name:
		return fmt.Errorf("name %q", s.Name)
	case s.Description != strings.Join(d.Comment, "\n"):
		return fmt.Errorf("description %q", s.Description)
	case !reflect.DeepEqual(s.Approaches, []string{d.Approach}):
		return fmt.Errorf("approaches %v", s.Approaches)
	case !reflect.DeepEqual(s.Workload, d.Workload):
		return fmt.Errorf("workload %+v, want %+v", s.Workload, d.Workload)
	case s.Duration != d.Duration || s.Seed != d.Seed:
		return fmt.Errorf("duration %v, seed %d", s.Duration, s.Seed)
	case len(s.Faults) != len(d.Faults):
		return fmt.Errorf("%d faults", len(s.Faults))
	}
	for i, e := range d.Faults {
		if err := sameFault(e, s.Faults[i]); err != nil {
			return fmt.Errorf("fault %d: %w", i, err)
		}
	}
	want := verdict.Expectation{}
	if len(d.Expect) > 0 {
		var err error
		if want, err = verdict.ParseList(d.Expect); err != nil {
			return err
		}
	}
	if got := s.Expect[d.Approach]; !reflect.DeepEqual(got.Outcomes, want.Outcomes) {
		return fmt.Errorf("expect %v, want %v", got.Outcomes, want.Outcomes)
	}
	return nil
}

func sameFault(e Entry, f Fault) error {
	params := map[string]string{}
	for _, p := range e.Params {
		params[p.Name] = p.Value
	}
	when := ""
	if f.Step.When != nil {
		when = f.Step.When.Holding
	}
	switch {
	case f.Fault.Kind() != e.Kind:
		return fmt.Errorf("kind %s", f.Fault.Kind())
	case !reflect.DeepEqual(chaos.Params(f.Fault), params):
		return fmt.Errorf("options %v, want %v", chaos.Params(f.Fault), params)
	case !reflect.DeepEqual(f.Step.Target, e.Target):
		return fmt.Errorf("target %+v", f.Step.Target)
	case f.Step.At.D() != e.At || f.Step.For.D() != e.For || when != e.When:
		return fmt.Errorf("at %v for %v when %q", f.Step.At, f.Step.For, when)
	}
	return nil
}

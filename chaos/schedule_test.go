package chaos

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ms(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }

func ats(plan []Planned) []time.Duration {
	out := make([]time.Duration, len(plan))
	for i, p := range plan {
		out[i] = p.At
	}
	return out
}

// TestCompile: each kind of timing gives the timeline it promises.
func TestCompile(t *testing.T) {
	pause := &ClientPause{}
	holder := Selector{Client: ClientHolder, Key: "k0"}
	node := Selector{Node: NodeOne, Server: "redis"}
	s := time.Second
	for _, tc := range []struct {
		name  string
		steps []Step
		dur   time.Duration
		want  []time.Duration // nil: check only count and bounds below
		count int
		err   string
	}{
		{name: "at", steps: []Step{{Fault: pause, Target: holder, At: Duration(3 * s), For: Duration(2 * s)}}, dur: 20 * s,
			want: []time.Duration{3 * s}},
		{name: "at 0 by default", steps: []Step{{Fault: pause, Target: holder}}, dur: s, want: []time.Duration{0}},
		{name: "every", steps: []Step{{Fault: pause, Target: node, Every: Duration(6 * s)}}, dur: 20 * s,
			want: []time.Duration{6 * s, 12 * s, 18 * s}},
		{name: "every from at", steps: []Step{{Fault: pause, Target: node, At: Duration(s), Every: Duration(6 * s)}}, dur: 20 * s,
			want: []time.Duration{s, 7 * s, 13 * s, 19 * s}},
		{name: "two steps sorted", steps: []Step{
			{Fault: pause, Target: node, Every: Duration(5 * s)},
			{Fault: pause, Target: holder, At: Duration(7 * s)}}, dur: 12 * s,
			want: []time.Duration{5 * s, 7 * s, 10 * s}},
		{name: "random", steps: []Step{{Fault: pause, Target: node, Random: &Random{Mean: Duration(s)}}}, dur: 1000 * s, count: -1},
		{name: "when", steps: []Step{{Fault: pause, Target: holder, At: Duration(2 * s), When: &When{Holding: "k0"}}}, dur: 10 * s,
			want: []time.Duration{2 * s}},
		{name: "no duration", steps: []Step{{Fault: pause, Target: holder}}, err: "duration 0s"},
		{name: "at past the end", steps: []Step{{Fault: pause, Target: holder, At: Duration(30 * s)}}, dur: 20 * s, err: "at 30s is not within"},
		{name: "no fault", steps: []Step{{Target: holder}}, dur: s, err: "step 1 (no fault): step has no fault"},
		{name: "bad fault", steps: []Step{{Fault: &SlowReplies{}, Target: node}}, dur: s, err: "latency 0s"},
		{name: "no target", steps: []Step{{Fault: pause}}, dur: s, err: "give node, nodes or client"},
		{name: "every and random", steps: []Step{{Fault: pause, Target: node, Every: Duration(s), Random: &Random{Mean: Duration(s)}}},
			dur: s, err: "one of every, random and when"},
		{name: "random without mean", steps: []Step{{Fault: pause, Target: node, Random: &Random{}}}, dur: s, err: "mean must be positive"},
		{name: "when without key", steps: []Step{{Fault: pause, Target: node, When: &When{}}}, dur: s, err: "holding: KEY"},
		{name: "when renewed", steps: []Step{{Fault: pause, Target: holder, At: Duration(s), When: &When{Renewed: "k0"}}}, dur: 10 * s,
			want: []time.Duration{s}},
		{name: "when releasing", steps: []Step{{Fault: pause, Target: node, When: &When{Releasing: "k0"}}}, dur: 10 * s,
			want: []time.Duration{0}},
		{name: "when holding and releasing", steps: []Step{{Fault: pause, Target: node, When: &When{Holding: "k0", Releasing: "k0"}}}, dur: s,
			err: "give one of holding: KEY, renewed: KEY and releasing: KEY"},
		{name: "jitter with when", steps: []Step{{Fault: pause, Target: node, Jitter: ms(5), When: &When{Holding: "k"}}}, dur: s,
			err: "jitter goes with at or every"},
		{name: "negative for", steps: []Step{{Fault: pause, Target: node, For: Duration(-s)}}, dur: s, err: "for -1s"},
		{name: "too many", steps: []Step{{Fault: pause, Target: node, Every: Duration(time.Microsecond)}}, dur: s, err: "more than 100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Compile(tc.steps, 7, tc.dur)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(ats(plan), tc.want) {
				t.Fatalf("times %v, want %v", ats(plan), tc.want)
			}
			for _, p := range plan {
				if p.At < 0 || p.At >= tc.dur {
					t.Fatalf("planned at %v, outside the run's %v", p.At, tc.dur)
				}
				if p.Fault == nil {
					t.Fatal("planned without fault")
				}
			}
			if tc.count == -1 { // random: about duration/mean, exponential gaps
				if n := len(plan); n < 900 || n > 1100 {
					t.Fatalf("%d injections with mean 1s over 1000s, want about 1000", n)
				}
			}
		})
	}
}

// TestCompileDeterministic: the same seed gives the same timeline and the
// same per-injection seeds; another seed another; a step added after
// another does not move it.
func TestCompileDeterministic(t *testing.T) {
	steps := []Step{
		{Fault: &ClientPause{}, Target: Selector{Client: ClientRandom}, Every: Duration(time.Second), Jitter: ms(300)},
		{Fault: &Partition{}, Target: Selector{Node: NodeMinority, Server: "zookeeper"}, Random: &Random{Mean: Duration(2 * time.Second)}},
	}
	a, _ := Compile(steps, 42, time.Minute)
	b, _ := Compile(steps, 42, time.Minute)
	c, _ := Compile(steps, 43, time.Minute)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different plans")
	}
	if reflect.DeepEqual(ats(a), ats(c)) {
		t.Fatal("another seed, same timeline")
	}
	more, _ := Compile(append(steps, Step{Fault: &DropReplies{}, Target: Selector{Node: NodeAll}, At: Duration(time.Second)}), 42, time.Minute)
	var first, firstAgain []time.Duration
	for _, p := range a {
		if p.Step == 0 {
			first = append(first, p.At)
		}
	}
	for _, p := range more {
		if p.Step == 0 {
			firstAgain = append(firstAgain, p.At)
		}
	}
	if !reflect.DeepEqual(first, firstAgain) {
		t.Fatal("adding a step moved another step's injections")
	}
	// Jitter stays within its bounds around each period.
	for _, p := range a {
		if p.Step != 0 {
			continue
		}
		nominal := p.At.Round(time.Second)
		if d := p.At - nominal; d < -300*time.Millisecond || d > 300*time.Millisecond {
			t.Fatalf("jittered time %v is %v from %v", p.At, d, nominal)
		}
	}
}

// TestSelector: shapes, kinds and validation errors.
func TestSelector(t *testing.T) {
	for _, tc := range []struct {
		sel  Selector
		kind TargetKind
		str  string
		err  string
	}{
		{sel: Selector{Node: NodeLeader, Server: "zookeeper"}, kind: TargetNode, str: "{node: leader, server: zookeeper}"},
		{sel: Selector{Client: ClientHolder, Key: "k0"}, kind: TargetClient, str: "{client: holder, key: k0}"},
		{sel: Selector{Client: "1", Nodes: []string{"redis-3", "redis-4"}}, kind: TargetLink, str: "{client: 1, nodes: [redis-3, redis-4]}"},
		{sel: Selector{}, err: "give node, nodes or client"},
		{sel: Selector{Node: NodeOne, Nodes: []string{"a"}}, err: "not both"},
		{sel: Selector{Client: ClientHolder}, err: "needs key"},
		{sel: Selector{Client: "1", Key: "k"}, err: "key goes with client: holder"},
		{sel: Selector{Client: "1", Server: "redis"}, err: "a client target has none"},
	} {
		err := tc.sel.Validate()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err = %v, want %q", tc.sel, err, tc.err)
			}
			continue
		}
		if err != nil || tc.sel.Kind() != tc.kind || tc.sel.String() != tc.str {
			t.Errorf("%+v: err %v kind %v %q, want %v %q", tc.sel, err, tc.sel.Kind(), tc.sel.String(), tc.kind, tc.str)
		}
	}
}

// TestPickNodes: counts per mode, and a repeatable choice.
func TestPickNodes(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		n, want int
	}{
		{NodeFirst, 5, 1}, {NodeFirst, 0, -1}, {NodeOne, 5, 1}, {NodeMinority, 5, 2}, {NodeMajority, 5, 3}, {NodeAll, 5, 5},
		{NodeMinority, 3, 1}, {NodeMajority, 3, 2}, {NodeMajority, 1, 1}, {NodeMinority, 1, -1}, {NodeOne, 0, -1}, {"leader", 3, -1},
	} {
		idx, err := PickNodes(tc.mode, tc.n, newRand(1))
		if tc.want < 0 {
			if err == nil {
				t.Errorf("%s of %d: %v, want an error", tc.mode, tc.n, idx)
			}
			continue
		}
		if err != nil || len(idx) != tc.want {
			t.Errorf("%s of %d: %v %v, want %d nodes", tc.mode, tc.n, idx, err, tc.want)
		}
		if tc.mode == NodeFirst && idx[0] != 0 {
			t.Errorf("first of %d: %v, want [0]", tc.n, idx)
		}
		again, _ := PickNodes(tc.mode, tc.n, newRand(1))
		if !reflect.DeepEqual(idx, again) {
			t.Errorf("%s of %d: %v then %v with one seed", tc.mode, tc.n, idx, again)
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

package chaos

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/tcpproxy"
)

// TestRegistry: every kind builds a fresh fault that names itself, says
// what it threatens, and lists its options.
func TestRegistry(t *testing.T) {
	kinds := Kinds()
	if len(kinds) != 14 {
		t.Fatalf("kinds %v", kinds)
	}
	for _, k := range kinds {
		a, err := New(k)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(k)
		if a.Kind() != k {
			t.Errorf("New(%q).Kind() = %q", k, a.Kind())
		}
		if a.Threat() == "" {
			t.Errorf("%s has no threat", k)
		}
		if reflect.ValueOf(a).Kind() != reflect.Pointer {
			t.Errorf("New(%q) is not a pointer: options could not be decoded into it", k)
		}
		if reflect.TypeOf(a).Elem().Size() > 0 && reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() {
			t.Errorf("New(%q) returned the same value twice", k)
		}
	}
	if _, err := New("rm-rf"); err == nil || !strings.Contains(err.Error(), "partition") {
		t.Errorf("unknown kind: %v, want the known ones listed", err)
	}
}

// TestDecode: options decode from YAML into the fault's struct, unknown
// options and invalid values are refused with their line, and Params gives
// back what was set.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		kind, yaml string
		want       Fault
		params     map[string]string
		err        string
	}{
		{kind: "partition", yaml: "", want: &Partition{}, params: map[string]string{}},
		{kind: "partition", yaml: "mode: reset", want: &Partition{Mode: "reset"}, params: map[string]string{"mode": "reset"}},
		{kind: "partition", yaml: "mode: sideways", err: "line 1: partition: mode \"sideways\""},
		{kind: "slow-replies", yaml: "latency: 200ms\njitter: 50ms", want: &SlowReplies{Latency: Duration(200 * time.Millisecond), Jitter: Duration(50 * time.Millisecond)},
			params: map[string]string{"latency": "200ms", "jitter": "50ms"}},
		{kind: "slow-replies", yaml: "latency: 200", err: "line 1: duration \"200\""},
		{kind: "slow-replies", yaml: "jitter: 5ms", err: "latency 0s: want at least 1ms"},
		{kind: "slow-replies", yaml: "latency: 10ms\njitter: 20ms", err: "jitter 20ms"},
		{kind: "slow-replies", yaml: "latency: 10ms\nlatncy: 20ms", err: "line 2: slow-replies has no option \"latncy\" (options: latency, jitter)"},
		{kind: "drop-replies", yaml: "x: 1", err: "has no option \"x\" (options: none)"},
		{kind: "client-clock", yaml: "offset: -2s", want: &ClientClock{Offset: Duration(-2 * time.Second)}, params: map[string]string{"offset": "-2s"}},
		{kind: "client-clock", yaml: "rate: 0.5", want: &ClientClock{Rate: 0.5}, params: map[string]string{"rate": "0.5"}},
		{kind: "client-clock", yaml: "offset: 1s\nrate: 0.5", err: "exactly one of offset"},
		{kind: "client-clock", yaml: "", err: "exactly one of offset"},
		{kind: "client-clock", yaml: "rate: -1", err: "backwards"},
		{kind: "server-restart", yaml: "delay: 3s", want: &ServerRestart{Delay: Duration(3 * time.Second)}, params: map[string]string{"delay": "3s"}},
		{kind: "server-restart", yaml: "delay: -3s", err: "delay -3s"},
		{kind: "client-pause", yaml: "[1, 2]", err: "want a mapping"},
		{kind: "db-failover", yaml: "mode: pause\nafter: 3s", want: &DBFailover{Mode: "pause", After: Duration(3 * time.Second)},
			params: map[string]string{"mode": "pause", "after": "3s"}},
		{kind: "db-failover", yaml: "replication: lose", err: "db-failover: replication \"lose\""},
	} {
		t.Run(tc.kind+" "+tc.yaml, func(t *testing.T) {
			var node *yaml.Node
			if tc.yaml != "" {
				var doc yaml.Node
				if err := yaml.Unmarshal([]byte(tc.yaml), &doc); err != nil {
					t.Fatal(err)
				}
				node = doc.Content[0]
			}
			f, err := Decode(tc.kind, node)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f, tc.want) {
				t.Fatalf("decoded %#v, want %#v", f, tc.want)
			}
			if p := Params(f); !reflect.DeepEqual(p, tc.params) {
				t.Fatalf("params %v, want %v", p, tc.params)
			}
		})
	}
}

// TestDuration: text and YAML forms, and the bare-number refusal.
func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"2s", 2 * time.Second, false}, {"150ms", 150 * time.Millisecond, false}, {"-1s", -time.Second, false},
		{"0", 0, false}, {"2", 0, true}, {"soon", 0, true},
	} {
		var d Duration
		err := yaml.Unmarshal([]byte("d: "+tc.in), &struct {
			D *Duration `yaml:"d"`
		}{&d})
		if (err != nil) != tc.err || (!tc.err && d.D() != tc.want) {
			t.Errorf("%q: %v %v, want %v (error: %v)", tc.in, d, err, tc.want, tc.err)
		}
	}
	b, _ := Duration(1500 * time.Millisecond).MarshalText()
	if string(b) != "1.5s" {
		t.Errorf("MarshalText = %s", b)
	}
}

// fakeFault injects by calling its function; it records heals in order.
type fakeFault struct {
	inject func(t Target) error
	healed *[]string
}

func (fakeFault) Kind() string             { return "fake" }
func (fakeFault) Threat() string           { return "none" }
func (fakeFault) Validate() error          { return nil }
func (fakeFault) Available(t Target) error { return nil }
func (f fakeFault) Inject(_ context.Context, t Target) (Heal, error) {
	if err := f.inject(t); err != nil {
		return nil, err
	}
	return func(context.Context) error { *f.healed = append(*f.healed, t.Name); return nil }, nil
}

// TestInjectAllRollsBack: when the second of three injections fails, the
// first is healed and the third never tried.
func TestInjectAllRollsBack(t *testing.T) {
	var tried, healed []string
	f := fakeFault{healed: &healed, inject: func(t Target) error {
		tried = append(tried, t.Name)
		if t.Name == "b" {
			return errors.New("boom")
		}
		return nil
	}}
	h, err := InjectAll(context.Background(), f, []Target{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	if err == nil || h != nil {
		t.Fatalf("err %v, heal %v", err, h != nil)
	}
	if !reflect.DeepEqual(tried, []string{"a", "b"}) || !reflect.DeepEqual(healed, []string{"a"}) {
		t.Fatalf("tried %v healed %v, want [a b] and [a]", tried, healed)
	}
	healed = nil
	h, err = InjectAll(context.Background(), fakeFault{healed: &healed, inject: func(Target) error { return nil }},
		[]Target{{Name: "a"}, {Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	h(context.Background())
	h(context.Background())
	if !reflect.DeepEqual(healed, []string{"b", "a"}) {
		t.Fatalf("healed %v, want [b a] once", healed)
	}
}

// TestToxicsRollBack: a network fault on several links that fails on one
// removes the toxics it added to the others. A stopped proxy makes the
// add fail.
func TestToxicsRollBack(t *testing.T) {
	p, other, stopped := tcpproxy.New("p", "127.0.0.1:1"), tcpproxy.New("other", "127.0.0.1:1"), tcpproxy.New("stopped", "127.0.0.1:1")
	stopped.Stop()
	_, err := (&Partition{}).Inject(context.Background(), Target{Kind: TargetNode, Name: "x",
		Links: []*tcpproxy.Proxy{other, p, stopped}})
	if !errors.Is(err, tcpproxy.ErrStopped) {
		t.Fatalf("a partition through a stopped proxy: %v, want it refused", err)
	}
	for _, px := range []*tcpproxy.Proxy{p, other} {
		if n := px.Toxics(); n != 0 {
			t.Errorf("proxy %s keeps %d toxics after the rollback", px.Name, n)
		}
	}
	h, err := (&SlowReplies{Latency: Duration(time.Millisecond)}).Inject(context.Background(),
		Target{Kind: TargetNode, Name: "x", Links: []*tcpproxy.Proxy{p, other}})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Toxics() + other.Toxics(); n != 2 {
		t.Fatalf("%d toxics, want 2", n)
	}
	if err := h(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := p.Toxics() + other.Toxics(); n != 0 {
		t.Fatalf("%d toxics after the heal", n)
	}
}

// What each fault declares it needs of the lab, pinned: a new fault is
// added here with what it needs, and a network fault that forgot Links
// would run on clients that bypass the proxies it acts on.
func TestFaultsDeclareTheirNeeds(t *testing.T) {
	want := map[string]Needs{
		"client-pause": {ClientProcess: true}, "client-crash": {ClientProcess: true}, "client-hang": {ClientProcess: true},
		"server-clock": {ServerClock: true}, "client-clock": {ClientClock: true},
		"partition": {Links: true}, "drop-replies": {Links: true}, "slow-replies": {Links: true},
	}
	for _, k := range Kinds() {
		f, err := New(k)
		if err != nil {
			t.Fatal(err)
		}
		if got := NeedsOf(f); got != want[k] {
			t.Errorf("%s needs %+v, want %+v", k, got, want[k])
		}
		// A fault that needs links is unavailable on a target without any.
		if NeedsOf(f).Links {
			if err := f.Available(Target{Kind: TargetNode, Name: "n"}); !errors.Is(err, ErrUnavailable) {
				t.Errorf("%s available on a node without links: %v", k, err)
			}
		}
	}
}

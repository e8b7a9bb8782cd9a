package scenario

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/verdict"
)

func registry() *impls.Registry {
	r := impls.NewRegistry()
	svc := memlock.NewService(1)
	r.Register(svc.Approach("memory"))
	a := svc.Approach("fenced-memory")
	a.Caps.Fencing = true
	r.Register(a)
	return r
}

const good = `# What it shows, and why.
# Second line.
name: demo
approaches: [memory, fenced-memory]
workload: {kind: counter, clients: 4, keys: 2, hold: uniform:1ms-5ms, ttl: 1s, fenced: true, renew: true, honour-lease: true, acquire-timeout: 2s}
clients: {as: processes}
duration: 10s
seed: 9
faults:
  - fault: client-pause
    target: {client: holder, key: "0"}
    at: 2s
    for: 1s
  - {fault: slow-replies, target: {node: all, server: redis}, at: 3s, for: 1s, latency: 200ms}
  - fault: partition
    target: {client: "1", nodes: [redis-3, redis-4]}
    every: 3s
    for: 1s
    params: {mode: reset}
servers: {redis: {persistence: aof-always}}
expect:
  memory: [double-grant:outlived, lost-update]
  cap:fencing: [double-grant, stale-write-refused, "not:lost-update"]
  "*": [safe]
`

// {at-least: [...]}: the outcomes must show, and other violations may too;
// not:X still forbids.
func TestExpectAtLeast(t *testing.T) {
	body := "name: x\napproaches: [memory]\nduration: 5s\nexpect:\n  memory: {at-least: [double-grant:outlived, \"not:lost-update\"]}\n"
	s, err := Parse([]byte(body), registry())
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := registry().Get("memory")
	e, ok := s.ExpectFor(mem)
	if !ok || !e.AtLeast || len(e.Outcomes) != 1 || e.Outcomes[0] != verdict.DoubleGrantOutlived || len(e.Forbidden) != 1 {
		t.Fatalf("memory expects %+v", e)
	}
	if e.String() != "at least double-grant:outlived + not lost-update" {
		t.Errorf("in words: %q", e.String())
	}
}

func TestParseGood(t *testing.T) {
	s, err := Parse([]byte(good), registry())
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "demo" || len(s.Approaches) != 2 || !s.Processes || s.Duration != 10*time.Second || s.Seed != 9 {
		t.Fatalf("scenario = %+v", s)
	}
	if s.Servers.Settings.Get(impls.Redis, "persistence") != "aof-always" {
		t.Errorf("servers = %+v", s.Servers)
	}
	if s.Description != "What it shows, and why.\nSecond line." {
		t.Errorf("description = %q", s.Description)
	}
	w := s.Workload
	if w.Kind != "counter" || w.Clients != 4 || w.Keys != 2 || w.TTL != time.Second || !w.Fenced || !w.Renew || !w.HonourLease ||
		w.AcquireTimeout != 2*time.Second || w.Hold.String() != "uniform:1ms-5ms" {
		t.Errorf("workload = %+v", w)
	}
	if len(s.Faults) != 3 || s.Faults[0].Fault.Kind() != "client-pause" || s.Faults[1].Fault.Kind() != "slow-replies" ||
		s.Faults[2].Step.Target.Client != "1" || s.Faults[2].Step.Every.D() != 3*time.Second {
		t.Fatalf("faults = %+v", s.Faults)
	}
	reg := registry()
	mem, _ := reg.Get("memory")
	fenced, _ := reg.Get("fenced-memory")
	if e, ok := s.ExpectFor(mem); !ok || len(e.Outcomes) != 2 || e.Outcomes[0] != verdict.DoubleGrantOutlived || e.AtLeast {
		t.Errorf("memory expects %+v", e)
	}
	if e, ok := s.ExpectFor(fenced); !ok || len(e.Forbidden) != 1 || e.Forbidden[0] != verdict.LostUpdate {
		t.Errorf("fenced-memory expects %+v (its capability entry)", e)
	}
}

// stall_threshold sets the stall monitor's threshold; 0 turns it off;
// without it, the default.
func TestStallThreshold(t *testing.T) {
	base := "name: x\napproaches: [memory]\nduration: 5s\n"
	for _, tt := range []struct {
		yaml string
		want time.Duration
	}{{"", 0}, {"stall_threshold: 250ms\n", 250 * time.Millisecond}, {"stall_threshold: 0\n", -1}} {
		s, err := Parse([]byte(base+tt.yaml), registry())
		if err != nil {
			t.Fatal(err)
		}
		if s.StallThreshold != tt.want {
			t.Errorf("%q: threshold %v, want %v", tt.yaml, s.StallThreshold, tt.want)
		}
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	base := "name: x\napproaches: [memory]\nduration: 5s\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", "empty file"},
		{"not a mapping", "- a\n- b\n", "line 1: a scenario is a mapping"},
		{"malformed", "name: [x\n", "line 1"},
		{"unknown key", base + "colour: red\n", `line 4: unknown key "colour"`},
		{"no name", "approaches: [memory]\nduration: 5s\n", "name is missing"},
		{"no approaches", "name: x\nduration: 5s\n", "approaches is missing"},
		{"unknown approach", "name: x\napproaches: [nope]\nduration: 5s\n", `line 2: unknown approach "nope"`},
		{"no duration", "name: x\napproaches: [memory]\n", "duration must be positive"},
		{"bare duration", "name: x\napproaches: [memory]\nduration: 5\n", "line 3"},
		{"bad workload kind", base + "workload: {kind: nope}\n", `line 4: workload: unknown workload "nope"`},
		{"unknown workload key", base + "workload: {klients: 3}\n", `line 4: unknown key "klients"`},
		{"bad hold", base + "workload: {hold: uniform:5ms}\n", "line 4: workload.hold"},
		{"negative ttl", base + "workload: {ttl: -1s}\n", "line 4: workload.ttl"},
		{"too many clients", base + "workload: {clients: 5000}\n", "out of range"},
		{"negative keys", base + "workload: {keys: -1}\n", "line 4: workload.keys"},
		{"negative acquire timeout", base + "workload: {acquire-timeout: -1s}\n", "line 4: workload.acquire-timeout"},
		{"params not a mapping", base + "faults:\n  - {fault: partition, target: {node: one}, params: reset}\n", "line 5"},
		{"clients as", base + "clients: {as: threads}\n", `line 4: clients.as "threads"`},
		{"fault not a mapping", base + "faults:\n  - client-pause\n", "line 5: a fault is a mapping"},
		{"fault without name", base + "faults:\n  - {at: 1s}\n", "line 5: fault: give its name"},
		{"unknown fault", base + "faults:\n  - {fault: meteor, target: {node: one}}\n", `line 5: unknown fault "meteor"`},
		{"unknown option", base + "faults:\n  - {fault: slow-replies, target: {node: one}, latencyy: 1s}\n", "latencyy"},
		{"no target", base + "faults:\n  - {fault: client-pause, at: 1s}\n", "line 5: client-pause: target"},
		{"holder without key", base + "faults:\n  - {fault: client-pause, target: {client: holder}}\n", "needs key"},
		{"at after end", base + "faults:\n  - {fault: client-pause, target: {client: \"0\"}, at: 9s}\n", "after the end of the run"},
		{"two schedules", base + "faults:\n  - {fault: client-pause, target: {client: \"0\"}, every: 1s, random: {mean: 1s}}\n", "give one of every"},
		{"negative for", base + "faults:\n  - {fault: client-pause, target: {client: \"0\"}, for: -1s}\n", "must not be negative"},
		{"expect not a mapping", base + "expect: [safe]\n", "line 4: expect is a mapping"},
		{"expect unknown outcome", base + "expect: {memory: [doom]}\n", `line 4: expect.memory: unknown outcome "doom"`},
		{"expect unknown approach", base + "expect: {nope: [safe]}\n", `unknown approach "nope"`},
		{"expect approach not in scenario", base + "expect: {fenced-memory: [safe]}\n", "not among the scenario's approaches"},
		{"expect unknown capability", base + "expect: {cap:teleport: [safe]}\n", `unknown capability "cap:teleport"`},
		{"expect safe with a violation", base + "expect: {memory: [safe, lost-update]}\n", "safe cannot go with lost-update"},
		{"expect empty", base + "expect: {memory: []}\n", "empty list"},
		{"expect at-least with safe", base + "expect: {memory: {at-least: [safe]}}\n", "at-least cannot hold safe"},
		{"expect a mapping not at-least", base + "expect: {memory: {atleast: [lost-update]}}\n", "or {at-least: [outcomes]}"},
		{"expect at-least and more", base + "expect: {memory: {at-least: [lost-update], not: [revoked]}}\n", "or {at-least: [outcomes]}"},
		{"expect at-least empty", base + "expect: {memory: {at-least: []}}\n", "empty list"},
		{"redis persistence", base + "servers: {redis: {persistence: sometimes}}\n", `line 4: servers.redis: persistence "sometimes": want none, aof-everysec`},
		{"unknown server option", base + "servers: {redis: {persist: always}}\n", `unknown key "persist"`},
		{"negative stall threshold", base + "stall_threshold: -1s\n", "line 4: stall_threshold -1s"},
		{"bare stall threshold", base + "stall_threshold: 100\n", "line 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), registry())
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.yaml)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestLoadBoundsAndNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxFileSize+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, registry()); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), registry()); err == nil {
		t.Fatal("a missing file loaded")
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\n"), 0o644)
	if _, err := Load(bad, registry()); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("err = %v, want the file named", err)
	}
}

// TestClientFaultsRunClientsAsProcesses: a scenario that pauses or crashes
// clients runs them as processes unless it says otherwise; other scenarios
// keep goroutines.
func TestClientFaultsRunClientsAsProcesses(t *testing.T) {
	const head = "name: x\napproaches: [memory]\nworkload: {kind: mutex, clients: 2}\nduration: 2s\n"
	for _, tt := range []struct {
		name, body string
		processes  bool
	}{
		{"client pause", "faults: [{fault: client-pause, target: {client: holder, key: \"0\"}, at: 1s, for: 500ms}]\n", true},
		{"client crash", "faults: [{fault: client-crash, target: {client: random}, at: 1s}]\n", true},
		{"client pause, goroutines asked for", "clients: {as: goroutines}\nfaults: [{fault: client-pause, target: {client: holder, key: \"0\"}, at: 1s, for: 500ms}]\n", false},
		{"server fault only", "faults: [{fault: slow-replies, target: {node: all, server: redis}, at: 1s, for: 1s, latency: 10ms}]\n", false},
		{"no fault", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(head+tt.body+"expect: {\"*\": [safe]}\n"), registry())
			if err != nil {
				t.Fatal(err)
			}
			if s.Processes != tt.processes {
				t.Fatalf("processes = %v, want %v", s.Processes, tt.processes)
			}
		})
	}
}

// The keys of `workload:` are the yaml tags of workload.Spec: exactly
// these, each once; what the scenario sets at its top level (duration,
// seed) or the command line and the runner set is refused there. Errors
// name the line of the value, also in block style.
func TestWorkloadKeys(t *testing.T) {
	const base = "name: x\napproaches: [memory]\nduration: 5s\n"
	all := "workload: {kind: tasks, clients: 3, keys: 2, hold: exp:2ms, ttl: 0, acquire-timeout: 1s, fenced: true, renew: true, honour-lease: true, reentry: 0.5}\n"
	s, err := Parse([]byte(base+all), registry())
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Workload; w.Kind != "tasks" || w.Clients != 3 || w.Keys != 2 || w.Hold.String() != "exp:2ms" ||
		w.TTL != 10*time.Second || w.AcquireTimeout != time.Second || !w.Fenced || !w.Renew || !w.HonourLease || w.Reentry != 0.5 {
		t.Errorf("workload = %+v (ttl 0 is the default, 10s)", w)
	}
	s, err = Parse([]byte(base+"workload: {ttl: , hold: }\n"), registry())
	if err != nil || s.Workload.TTL != 10*time.Second || s.Workload.Hold.String() != "0s" {
		t.Errorf("empty values must take the defaults: %+v, %v", s, err)
	}
	for _, tt := range []struct{ name, yaml, want string }{
		{"duration is the scenario's", "workload: {duration: 5s}\n", `line 4: unknown key "duration"`},
		{"seed is the scenario's", "workload: {seed: 3}\n", `line 4: unknown key "seed"`},
		{"reentry is a share", "workload: {reentry: 2}\n", `line 4: workload.reentry is a share of holds from 0 to 1, got 2`},
		{"rate is the command line's", "workload: {rate: 3}\n", `line 4: unknown key "rate"`},
		{"store is the runner's", "workload: {store: x}\n", `line 4: unknown key "store"`},
		{"twice", "workload: {keys: 1, keys: 2}\n", "line 4: workload.keys given twice"},
		{"not a mapping", "workload: mutex\n", "line 4: workload is a mapping"},
		{"bare ttl", "workload:\n  kind: mutex\n  ttl: 5\n", `line 6: workload.ttl: duration "5": write it with a unit`},
		{"bad hold, block style", "workload:\n  hold: uniform:5ms\n", "line 5: workload.hold: distribution"},
		{"clients not a number", "workload:\n  clients: many\n", "line 5: workload.clients: cannot unmarshal"},
		{"renew not a bool", "workload:\n  renew: [x]\n", "line 5: workload.renew: want a single value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(base+tt.yaml), registry())
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tt.want)
			}
		})
	}
}

// A scenario's approach-files are read before the scenario itself (their
// approaches must be registered first), relative to its folder; a list of
// anything else is a one-line error with its line.
func TestApproachFiles(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
		err  string
	}{
		{"name: x\napproach-files: [a.yaml, sub/b.yaml, /abs/c.yaml]\n", []string{"DIR/a.yaml", "DIR/sub/b.yaml", "/abs/c.yaml"}, ""},
		{"name: x\n", nil, ""},
		{"name: x\napproach-files: a.yaml\n", nil, "line 2: approach-files: want a list"},
		{"name: x\napproach-files: []\n", nil, "line 2: approach-files: want a list"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "scenario.yaml")
		if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ApproachFiles(path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: %v, want one line with %q", tc.file, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.file, err)
		}
		for i := range tc.want {
			tc.want[i] = strings.Replace(tc.want[i], "DIR", dir, 1)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.file, got, tc.want)
		}
	}
}

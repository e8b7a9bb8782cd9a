package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
)

// parseAs parses an external config into cfg and checks the error against
// wantErr ("": none); it says whether the case goes on (no error wanted).
func parseAs(t *testing.T, yaml string, cfg *ExternalConfig, wantErr string) bool {
	t.Helper()
	err := ParseExternalConfig([]byte(yaml), cfg)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// Addresses that are not this machine's loopback are refused unless the
// user says so, by the flag or in the file; the refusal names both.
func TestExternalConfigRemoteAddresses(t *testing.T) {
	const remote = "redis: [10.1.2.3:6379, 127.0.0.1:6380, 10.1.2.4:6379]\n"
	tests := []struct {
		name, yaml string
		flag       bool
		wantErr    string
		hosts      []string
	}{
		{"refused", remote, false, "--allow-remote (or allow-remote: true in the config)", nil},
		{"by flag", remote, true, "", []string{"10.1.2.3", "10.1.2.4"}},
		{"by file", "allow-remote: true\n" + remote, false, "", []string{"10.1.2.3", "10.1.2.4"}},
		{"file says no, flag says yes", "allow-remote: false\n" + remote, true, "", []string{"10.1.2.3", "10.1.2.4"}},
		{"a DSN", "mysql: root@tcp(db1.example:3306)/locklab\n", false, `"db1.example:3306" is not on this machine's loopback`, nil},
		{"a DSN allowed", "allow-remote: true\nmysql: root@tcp(db1.example:3306)/locklab\n", false, "", []string{"db1.example"}},
		{"loopback only", "redis: [127.0.0.1:6379, localhost:6380]\n", false, "", nil},
		{"not a boolean", "allow-remote: maybe\nredis: [127.0.0.1:6379]\n", false, "allow-remote: want true or false", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ExternalConfig{AllowRemote: tt.flag}
			if !parseAs(t, tt.yaml, &cfg, tt.wantErr) {
				return
			}
			if got := cfg.RemoteHosts(); !reflect.DeepEqual(got, tt.hosts) {
				t.Fatalf("RemoteHosts = %v, want %v", got, tt.hosts)
			}
		})
	}
}

// fault-commands: a kind's commands go to each of its nodes with their
// placeholders filled in, a node's own (by name or address) override them,
// and every mistake is named before anything runs.
func TestFaultCommandsResolve(t *testing.T) {
	const servers = "allow-remote: true\nredis: [10.0.0.1:6379, 10.0.0.2:6380]\nzookeeper: [127.0.0.1:2181]\n"
	tests := []struct {
		name, yaml string
		want       map[string]map[string]string
		wantErr    string
	}{
		{"kind and node", servers + `fault-commands:
  redis:
    pause: ssh {host} sudo kill -STOP $(cat /run/redis-{port}.pid)
    resume: ssh {host} sudo kill -CONT $(cat /run/redis-{port}.pid)
  redis-1:
    pause: docker pause {node}
    resume: docker unpause {node}
    kill: docker kill {node}
    start: docker start {node}
  10.0.0.1:6379:
    clock: ssh {host} "echo {offset} > /etc/faketime.rc"
`, map[string]map[string]string{
			"redis-0": {"pause": "ssh 10.0.0.1 sudo kill -STOP $(cat /run/redis-6379.pid)", "resume": "ssh 10.0.0.1 sudo kill -CONT $(cat /run/redis-6379.pid)",
				"clock": `ssh 10.0.0.1 "echo {offset} > /etc/faketime.rc"`},
			"redis-1": {"pause": "docker pause redis-1", "resume": "docker unpause redis-1", "kill": "docker kill redis-1", "start": "docker start redis-1"},
		}, ""},
		{"shell braces kept", servers + "fault-commands:\n  zk-1:\n    pause: \"ssh h 'pkill -STOP -f ${ZK:-zookeeper}'\"\n    resume: ssh h pkill -CONT -f zookeeper\n",
			map[string]map[string]string{"zk-1": {"pause": "ssh h 'pkill -STOP -f ${ZK:-zookeeper}'", "resume": "ssh h pkill -CONT -f zookeeper"}}, ""},
		{"unknown node", servers + "fault-commands:\n  redis-7:\n    pause: x\n    resume: y\n", nil,
			`fault-commands: "redis-7" is no server kind, node or address of this config (nodes: redis-0, redis-1, zk-1)`},
		{"unknown operation", servers + "fault-commands:\n  redis:\n    freeze: x\n", nil, `unknown operation "freeze" (operations: clock, isolate, kill, pause, rejoin, resume, start)`},
		{"half a pair", servers + "fault-commands:\n  redis-0:\n    kill: docker kill r0\n", nil, "redis-0 has kill but no start: give both or neither"},
		{"clock without offset", servers + "fault-commands:\n  redis:\n    clock: date -s now\n", nil, "must use {offset}"},
		{"empty command", servers + "fault-commands:\n  redis:\n    pause: ''\n    resume: x\n", nil, "pause: empty command"},
		{"not a mapping", servers + "fault-commands: [x]\n", nil, "fault-commands: want, per server kind, node or address"},
		{"timeout", servers + "fault-timeout: soon\n", nil, `fault-timeout "soon": want a positive duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg ExternalConfig
			if !parseAs(t, tt.yaml, &cfg, tt.wantErr) {
				return
			}
			if !reflect.DeepEqual(cfg.commands, tt.want) {
				t.Fatalf("commands = %v\nwant %v", cfg.commands, tt.want)
			}
		})
	}
}

// Before a run, a fault may pick any node its selector allows: each must
// have the commands the fault needs, and the refusal names the one that
// has not; a node named that the config does not list is refused too.
func TestPlannedExternalNodes(t *testing.T) {
	var cfg ExternalConfig
	err := ParseExternalConfig([]byte(`allow-remote: true
redis: [10.0.0.1:6379, 10.0.0.2:6379, 10.0.0.3:6379]
zookeeper: [127.0.0.1:2181]
fault-commands:
  redis:
    pause: docker pause {node}
    resume: docker unpause {node}
  redis-2:
    kill: docker kill {node}
    start: docker start {node}
    isolate: docker network disconnect n {node}
    rejoin: docker network connect n {node}
    clock: set-clock {node} {offset}
`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	any3, ok, err := cfg.Planned(impls.Redis, nil)
	if err != nil || !ok {
		t.Fatalf("Planned: ok %v, err %v", ok, err)
	}
	if err := any3.CanPause(); err != nil {
		t.Errorf("every redis node pauses: %v", err)
	}
	for name, can := range map[string]func() error{"restart": any3.CanRestart, "isolate": any3.CanIsolate, "clock": any3.CanSetClock} {
		if err := can(); err == nil || !strings.Contains(err.Error(), "redis-0") {
			t.Errorf("%s on any redis node: err = %v, want redis-0 named", name, err)
		}
	}
	if err := any3.CanSetClock(); !errors.Is(err, ErrNoFakeTime) {
		t.Errorf("clock refusal %v does not wrap ErrNoFakeTime", err)
	}
	two, _, err := cfg.Planned(impls.Redis, []string{"redis-2"})
	if err != nil {
		t.Fatal(err)
	}
	for name, can := range map[string]func() error{"pause": two.CanPause, "restart": two.CanRestart, "isolate": two.CanIsolate, "clock": two.CanSetClock} {
		if err := can(); err != nil {
			t.Errorf("%s on redis-2: %v", name, err)
		}
	}
	if _, _, err := cfg.Planned(impls.Redis, []string{"redis-5"}); err == nil || !strings.Contains(err.Error(), `no redis node "redis-5"`) {
		t.Errorf("a node the config lacks: err = %v", err)
	}
	if _, ok, err := cfg.Planned(impls.ZooKeeper, nil); err != nil || ok {
		t.Errorf("zookeeper has no commands: ok %v, err %v; want nothing to act with", ok, err)
	}
}

// A fault command runs in a shell with a timeout; what it printed goes to
// the log; a failure or a timeout is ErrFaultCommand naming the node, the
// operation and the command, and the timeout ends what the command started.
func TestFaultCommandRunner(t *testing.T) {
	sp := spawn.New()
	defer sp.Close()
	var log strings.Builder
	r := &commandRunner{spawn: sp, timeout: time.Second, log: &log}
	ctx := context.Background()
	if err := r.run(ctx, "redis-1", OpPause, "echo paused {node}; echo warn >&2"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"redis-1 pause: echo paused {node}; echo warn >&2", "exit 0 after", "  | paused {node}", "  | warn"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	err := r.run(ctx, "redis-2", OpKill, "echo no such container >&2; exit 3")
	if !errors.Is(err, ErrFaultCommand) || !strings.Contains(err.Error(), "fault command kill of redis-2 (echo no such container >&2; exit 3): exit status 3: no such container") {
		t.Fatalf("err = %v", err)
	}
	// A command that hangs, with a child that would outlive it.
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	start := time.Now()
	err = r.run(ctx, "redis-3", OpStart, "sleep 60 & echo $! > "+pidFile+"; wait")
	if !errors.Is(err, ErrFaultCommand) || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a command timing out after 1 s took %v", took)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, strings.TrimSpace(string(b)))
	// One whose run ended first was cut short, and says so: its
	// fault-timeout did not run out.
	ended, end := context.WithTimeout(ctx, 200*time.Millisecond)
	defer end()
	err = r.run(ended, "redis-4", OpStart, "sleep 60")
	if !errors.Is(err, ErrFaultCommand) || !strings.Contains(err.Error(), "when the run ended") || strings.Contains(err.Error(), "fault-timeout") {
		t.Fatalf("err = %v, want the command cut short when the run ended", err)
	}
}

// waitGone waits until process pid has ended (a zombie counts as ended).
func waitGone(t *testing.T, pid string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := exec.Command("ps", "-o", "stat=", "-p", pid).Output()
		if err != nil || strings.HasPrefix(strings.TrimSpace(string(out)), "Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s outlived its fault command's timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A pause or resume that failed is run again, twice at most (a starved
// container the engine could not freeze is as it was); a kill that failed
// is not.
func TestFailedPauseIsAskedAgain(t *testing.T) {
	sp := spawn.New()
	defer sp.Close()
	for _, tt := range []struct {
		op      string
		fails   int // times the command fails before it succeeds
		wantErr bool
	}{{OpPause, 1, false}, {OpPause, 2, false}, {OpPause, 3, true}, {OpResume, 2, false}, {OpKill, 1, true}} {
		t.Run(fmt.Sprintf("%s-%d", tt.op, tt.fails), func(t *testing.T) {
			tries := filepath.Join(t.TempDir(), "tries")
			cmd := fmt.Sprintf("echo x >> %s; if [ $(wc -l < %s) -gt %d ]; then exit 0; fi; echo unable to freeze >&2; exit 1", tries, tries, tt.fails)
			c := &nodeCommands{node: "redis-1", ops: map[string]string{tt.op: cmd}, run: &commandRunner{spawn: sp, timeout: 5 * time.Second}}
			err := c.do(context.Background(), tt.op)
			if (err != nil) != tt.wantErr {
				t.Fatalf("%s: err = %v, want an error: %v", tt.op, err, tt.wantErr)
			}
		})
	}
}

// A pause or resume (a fault command's or the Docker engine's) is asked
// again twice when it fails, unless it ran out of time or its ctx ended.
func TestAskedAgain(t *testing.T) {
	freeze := errors.New("OCI runtime pause failed: unable to freeze")
	for _, tt := range []struct {
		name      string
		fails     int
		err       error
		cancelled bool
		calls     int
		wantErr   bool
	}{
		{"once", 1, freeze, false, 2, false},
		{"twice", 2, freeze, false, 3, false},
		{"thrice", 3, freeze, false, 3, true},
		{"out of time", 1, fmt.Errorf("timed out: %w", context.DeadlineExceeded), false, 1, true},
		{"ctx ended", 1, freeze, true, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			calls := 0
			err := askedAgain(ctx, func() error {
				calls++
				if calls <= tt.fails {
					return tt.err
				}
				return nil
			})
			if calls != tt.calls || (err != nil) != tt.wantErr {
				t.Fatalf("%d calls, err %v; want %d calls, an error: %v", calls, err, tt.calls, tt.wantErr)
			}
		})
	}
}

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/internal/remotehosts"
	"github.com/locklab/locklab/scenario"
)

// remoteConfig writes an external config naming servers by their network
// addresses, with the fault commands given (YAML, indented under
// fault-commands: redis:).
func remoteConfig(t *testing.T, dir, name string, servers []remotehosts.Server, commands string) string {
	t.Helper()
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr)
	}
	cfg := fmt.Sprintf("redis: [%s]\n", strings.Join(addrs, ", "))
	if commands != "" {
		cfg += "fault-commands:\n  redis:\n" + commands
	}
	return writeFile(t, dir, name, cfg)
}

// dockerCommands are fault commands acting on the containers of net
// through docker, as an operator's would through ssh, systemctl and
// iptables: those for ops, or all of them.
func dockerCommands(net *remotehosts.Network, ops ...string) string {
	ctr := net.Name + "-{node}"
	cmds := map[string]string{
		"pause": "docker pause " + ctr, "resume": "docker unpause " + ctr,
		"kill": "docker kill " + ctr, "start": "docker start " + ctr,
		"isolate": "docker network disconnect " + net.Name + " " + ctr,
		"rejoin":  "docker network connect --ip {host} " + net.Name + " " + ctr,
		"clock":   fmt.Sprintf("docker exec %s sh -c 'echo {offset} > %[2]s.tmp && mv %[2]s.tmp %[2]s'", ctr, remotehosts.ClockFile),
	}
	if len(ops) == 0 {
		ops = []string{"pause", "resume", "kill", "start", "isolate", "rejoin", "clock"}
	}
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "    %s: %s\n", op, cmds[op])
	}
	return b.String()
}

// runLocklab runs locklab and returns its exit code and what it printed.
func runLocklab(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	code, out, _ := runLocklabPID(t, env, args...)
	return code, out
}

// runLocklabPID is runLocklab, saying which process it ran.
func runLocklabPID(t *testing.T, env []string, args ...string) (code int, out string, pid int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("locklab %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), string(b), cmd.Process.Pid
}

// runDecided runs locklab until its verdict is decided, at most three
// times: a run left undecided (the lab stood still on what decides it, a
// starved container restarting past the holds) says nothing of the lock,
// so it is run again; a contradiction, or any other exit, is final.
// results is emptied between tries. A try undecided because its fault took
// effect after the holds it struck (a container's kill and start took 8 to
// 22 s on a slow CI machine, past holds of 8-9 s in all three tries) is
// followed by one on a copy of the scenario whose holds, lease, wait and
// run are longer by the lateness that try measured, and 2 s.
func runDecided(t *testing.T, env []string, results string, args ...string) (code int, out string, pid int) {
	t.Helper()
	args = slices.Clone(args)
	scenario := scenarioArg(args)
	var original string
	var late time.Duration
	for try := 1; ; try++ {
		code, out, pid = runLocklabPID(t, env, args...)
		if code != exitUndecided || try == 3 {
			return code, out, pid
		}
		t.Logf("try %d was undecided; again:\n%s", try, out)
		if l := lateBy(out); l > late && scenario >= 0 {
			if original == "" {
				original = args[scenario]
			}
			late = l
			args[scenario] = stretched(t, original, late+2*time.Second)
			t.Logf("its fault took effect %v late: the next try runs %s, its times %v longer", late, args[scenario], late+2*time.Second)
		}
		if err := os.RemoveAll(results); err != nil {
			t.Fatal(err)
		}
	}
}

// Servers on "other hosts" (containers on a Docker network of the test's
// own, addressed by their network addresses): refused without
// --allow-remote; with it, a bench runs against them and records where,
// and a shipped scenario's server restart acts on them through the fault
// commands (run with the engine reached over TCP, as an engine elsewhere
// is), showing its expected double grant. A fault command that fails is an
// infrastructure error naming it; a fault no command does is refused
// before the run.
func dockerServersOnOtherHosts(t *testing.T) {
	net := remotehosts.New(t)
	servers := net.Redis(t, 5)
	tmp := t.TempDir()
	cfg := remoteConfig(t, tmp, "remote.yaml", servers, dockerCommands(net))
	scenario := func(name string) string { return filepath.Join("..", "..", "scenarios", name+".yaml") }

	t.Run("refused without --allow-remote", func(t *testing.T) {
		results := filepath.Join(tmp, "refused")
		code, out := runLocklab(t, nil, "bench", "--cluster", "external", "--config", cfg, "--approaches", "redis-setnx-px-lua", "--results", results)
		if code != exitUsage || !strings.Contains(out, servers[0].Addr) || !strings.Contains(out, "--allow-remote") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Fatalf("exit %d, want %d and one line naming the address and --allow-remote:\n%s", code, exitUsage, out)
		}
		if _, err := os.Stat(results); !os.IsNotExist(err) {
			t.Errorf("a results folder was created (stat: %v)", err)
		}
	})

	t.Run("bench", func(t *testing.T) {
		results := filepath.Join(tmp, "bench")
		// Run again when undecided: four redis-redlock clients whose rounds
		// all ran past the node timeout on a starved machine retired, and
		// nobody was granted in the 2 s.
		code, out, _ := runDecided(t, nil, results, "bench", "--cluster", "external", "--config", cfg, "--allow-remote",
			"--approaches", "redis-setnx-px-lua,redis-redlock", "--clients", "1,4", "--duration", "2s", "--results", results)
		if code != exitOK {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		hosts := strings.Split(servers[0].Addr, ":")[0]
		if !strings.Contains(out, "servers on other hosts, which locklab's traffic and faults will reach: "+hosts) || strings.Count(out, "servers on other hosts") != 1 {
			t.Errorf("the hosts are not named once:\n%s", out)
		}
		_, res := readResults(t, results)
		if len(res.Servers["redis"]) != len(servers) {
			t.Fatalf("results.json servers = %v, want the %d addresses", res.Servers, len(servers))
		}
		for i, s := range servers {
			if res.Servers["redis"][i] != s.Addr {
				t.Errorf("results.json servers.redis[%d] = %s, want %s", i, res.Servers["redis"][i], s.Addr)
			}
		}
		if v := res.Versions["redis"]; !strings.HasPrefix(v, "redis 7.") {
			t.Errorf("results.json versions.redis = %q, want the servers' version", v)
		}
		if len(res.Runs) != 4 {
			t.Fatalf("%d runs, want 4", len(res.Runs))
		}
		for _, r := range res.Runs {
			if r.Acquired == 0 || r.DoubleGrants != 0 {
				t.Errorf("%s: %d grants, %d double grants", r.Case, r.Acquired, r.DoubleGrants)
			}
		}
	})

	t.Run("server restart through the engine over TCP", func(t *testing.T) {
		engine := remotehosts.EngineOverTCP(t)
		results := filepath.Join(tmp, "restart")
		code, out, _ := runDecided(t, []string{"DOCKER_HOST=" + engine}, results, "run", "--cluster", "external", "--config", cfg, "--allow-remote",
			"--results", results, longerHolds(t, scenario("redlock-restart-no-persistence"), tmp))
		if code != exitOK {
			logHistory(t, results)
			t.Fatalf("exit %d, want the scenario's expected outcome:\n%s", code, out)
		}
		dir, res := readResults(t, results)
		if len(res.Runs) != 1 || res.Runs[0].DoubleGrants == 0 {
			t.Fatalf("runs = %+v, want redis-redlock granting twice", res.Runs)
		}
		log, err := os.ReadFile(filepath.Join(dir, "fault-commands.log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"redis-2 kill: docker kill " + net.Name + "-redis-2\n  exit 0", "redis-2 start: docker start " + net.Name + "-redis-2\n  exit 0"} {
			if !strings.Contains(string(log), want) {
				t.Errorf("fault-commands.log lacks %q:\n%s", want, log)
			}
		}
	})

	t.Run("server pause", func(t *testing.T) {
		results := filepath.Join(tmp, "pause")
		code, out, _ := runDecided(t, nil, results, "run", "--cluster", "external", "--config", cfg, "--allow-remote", "--approach", "redis-redlock",
			"--duration", "5s", "--results", results, scenario("server-pause"))
		if code != exitOK {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		dir, _ := readResults(t, results)
		historyHasFault(t, dir, "server-pause")
		log, _ := os.ReadFile(filepath.Join(dir, "fault-commands.log"))
		for _, s := range servers {
			for _, op := range []string{"pause: docker pause ", "resume: docker unpause "} {
				if !strings.Contains(string(log), s.Node+" "+op+s.Container) {
					t.Errorf("fault-commands.log has no %s%s of %s", op, s.Container, s.Node)
				}
			}
		}
	})

	t.Run("server clock jump through a command", func(t *testing.T) {
		results := filepath.Join(tmp, "clock")
		code, out, _ := runDecided(t, nil, results, "run", "--cluster", "external", "--config", cfg, "--allow-remote", "--approach", "redis-setnx-px-lua",
			"--results", results, scenario("redis-server-clock-jump"))
		if code != exitOK {
			t.Fatalf("exit %d, want the scenario's expected outcome:\n%s", code, out)
		}
		dir, res := readResults(t, results)
		if len(res.Runs) != 1 || res.Runs[0].DoubleGrants == 0 {
			t.Fatalf("runs = %+v, want a double grant", res.Runs)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "fault-commands.log"))
		for _, want := range []string{"redis-0 clock: docker exec " + net.Name + "-redis-0 sh -c 'echo +15.000 > ", "echo +0.000 > "} {
			if !strings.Contains(string(log), want) {
				t.Errorf("fault-commands.log lacks %q:\n%s", want, log)
			}
		}
	})

	t.Run("server isolate through commands", func(t *testing.T) {
		results := filepath.Join(tmp, "isolate")
		// An undecided run is run again: with two busy loops beside the
		// suite both redis-redlock clients' first rounds ran past the node
		// timeout in the starved containers and retired them.
		code, out, _ := runDecided(t, nil, results, "run", "--cluster", "external", "--config", cfg, "--allow-remote", "--results", results,
			writeScenario(t, t.TempDir(), `name: remote-isolate
approaches: [redis-redlock]
workload: {kind: mutex, clients: 2, keys: 1, hold: 5ms, ttl: 5s, acquire-timeout: 1s}
duration: 5s
seed: 1
faults:
  - fault: server-isolate
    target: {node: redis-1}
    at: 1s
    for: 2s
expect:
  "*": [safe]
`))
		if code != exitOK {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		dir, _ := readResults(t, results)
		historyHasFault(t, dir, "server-isolate")
		log, _ := os.ReadFile(filepath.Join(dir, "fault-commands.log"))
		for _, want := range []string{"redis-1 isolate: docker network disconnect ", "redis-1 rejoin: docker network connect --ip " + strings.Split(servers[1].Addr, ":")[0]} {
			if !strings.Contains(string(log), want) {
				t.Errorf("fault-commands.log lacks %q:\n%s", want, log)
			}
		}
	})

	t.Run("a failing fault command is an infrastructure error", func(t *testing.T) {
		bad := remoteConfig(t, tmp, "bad.yaml", servers, strings.ReplaceAll(dockerCommands(net), "docker pause "+net.Name, "docker pause "+net.Name+"-gone"))
		// The pause is due 2 s in: 6 s leave its command time to fail
		// before the end of the case cuts it short (under a load of 35 a
		// docker command took over a second, and 3 s ended the case first).
		code, out := runLocklab(t, nil, "run", "--cluster", "external", "--config", bad, "--allow-remote", "--approach", "redis-redlock",
			"--duration", "6s", "--results", filepath.Join(tmp, "bad"), scenario("server-pause"))
		if code != exitInfra || !strings.Contains(out, "fault command pause of redis-0 (docker pause "+net.Name+"-gone-redis-0)") {
			t.Fatalf("exit %d, want %d naming the command:\n%s", code, exitInfra, out)
		}
	})

	t.Run("a fault no command does is refused before the run", func(t *testing.T) {
		pauseOnly := remoteConfig(t, tmp, "pause-only.yaml", servers, dockerCommands(net, "pause", "resume"))
		results := filepath.Join(tmp, "no-kill")
		code, out := runLocklab(t, nil, "run", "--cluster", "external", "--config", pauseOnly, "--allow-remote", "--results", results,
			scenario("redlock-restart-no-persistence"))
		if code != exitUsage || !strings.Contains(out, "server-restart") || !strings.Contains(out, "no kill or start command") {
			t.Fatalf("exit %d, want %d naming the missing commands:\n%s", code, exitUsage, out)
		}
		if _, err := os.Stat(results); !os.IsNotExist(err) {
			t.Errorf("a results folder was created (stat: %v)", err)
		}
	})

	t.Run("an engine on another host is refused without --allow-remote", func(t *testing.T) {
		// Refused before anything is sent: the address is a container of
		// the test's network all the same.
		host := strings.Split(servers[0].Addr, ":")[0]
		code, out := runLocklab(t, []string{"DOCKER_HOST=tcp://" + host + ":2375"}, "bench", "--cluster", "docker", "--image", "local",
			"--results", filepath.Join(tmp, "engine-refused"))
		if code != exitUsage || !strings.Contains(out, "on another host ("+host+")") || !strings.Contains(out, "--allow-remote") {
			t.Fatalf("exit %d, want %d naming the host and --allow-remote:\n%s", code, exitUsage, out)
		}
	})
}

// The Docker engine reached over TCP on 127.0.0.1 stands for an engine
// elsewhere: --cluster docker starts the servers there and says so; a
// shipped server restart and a server clock jump (the offset file kept in
// the container, set through the engine: this machine's files are not the
// engine's) show their double grants; and when locklab is killed, its
// guard removes the containers through that engine.
func dockerEngineOverTCP(t *testing.T) {
	engine := remotehosts.EngineOverTCP(t)
	tmp := t.TempDir()
	// The guard's docker command, seen: which engine it was told to use.
	bin := filepath.Join(tmp, "bin")
	calls := filepath.Join(tmp, "docker-calls")
	real, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, bin, "docker", fmt.Sprintf("#!/bin/sh\necho \"$DOCKER_HOST $*\" >> %s\nexec %s \"$@\"\n", calls, real))
	if err := os.Chmod(filepath.Join(bin, "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"DOCKER_HOST=" + engine, "PATH=" + bin + ":" + os.Getenv("PATH")}

	t.Run("bench", func(t *testing.T) {
		code, out := runLocklab(t, env, "bench", "--cluster", "docker", "--image", "local", "--approaches", "redis-setnx-px-lua",
			"--clients", "2", "--duration", "2s", "--results", filepath.Join(tmp, "bench"))
		if code != exitOK || !strings.Contains(out, "the Docker engine at "+engine+" is taken to be another machine's") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		_, res := readResults(t, filepath.Join(tmp, "bench"))
		if len(res.Runs) != 1 || res.Runs[0].Acquired == 0 {
			t.Fatalf("runs = %+v", res.Runs)
		}
	})

	for _, sc := range []string{"redis-restart-no-persistence", "redis-server-clock-jump"} {
		t.Run(sc, func(t *testing.T) { dockerDoubleGrant(t, env, sc) })
	}

	t.Run("SIGKILL", func(t *testing.T) {
		cmd := exec.Command(binary, "cluster", "up", "--cluster", "docker", "--image", "local", "--servers", "redis")
		cmd.Env = append(os.Environ(), env...)
		signalDockerCluster(t, cmd, syscall.SIGKILL, 5)
		b, _ := os.ReadFile(calls)
		_, rest, ok := strings.Cut(string(b), engine+" ps -aq --filter label=locklab.session=")
		if !ok {
			t.Fatalf("the guard did not use the engine at %s:\n%s", engine, b)
		}
		// The guard's last step removes the session's network, after its
		// docker command logged the call into this test's temp dir: wait
		// for it, or the dir's removal races that write.
		network := "locklab-" + strings.Fields(rest)[0]
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			inspect := exec.Command(real, "network", "inspect", network)
			inspect.Env = append(os.Environ(), "DOCKER_HOST="+engine)
			if inspect.Run() != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("network %s still there 30 s after the guard began", network)
			}
		}
	})
}

// logHistory logs the history of the one run under results, for a test
// that failed on a run of two clients' few operations: the run's folder
// goes with the test's temp dir, and what each client asked and was
// answered around the fault is what tells why.
func logHistory(t *testing.T, results string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(results, "*", history.FileName))
	if len(dirs) != 1 {
		t.Logf("no history to show: %v", dirs)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(historyBytes(t, dirs[0]))), "\n")
	if len(lines) > 600 {
		lines = append(lines[:300], append([]string{"..."}, lines[len(lines)-300:]...)...)
	}
	t.Logf("%s:\n%s", dirs[0], strings.Join(lines, "\n"))
}

// tookEffectLate is how the verdict tells a fault that took effect after
// the holds it struck (verdict.LabStalled).
var tookEffectLate = regexp.MustCompile(`the fault at ([0-9.]+) s took effect only at ([0-9.]+) s`)

// lateBy is how much later than asked the latest such fault in out took
// effect; 0 when none did.
func lateBy(out string) time.Duration {
	var late time.Duration
	for _, m := range tookEffectLate.FindAllStringSubmatch(out, -1) {
		at, err1 := strconv.ParseFloat(m[1], 64)
		took, err2 := strconv.ParseFloat(m[2], 64)
		if err1 == nil && err2 == nil && took > at {
			late = max(late, time.Duration((took-at)*float64(time.Second)))
		}
	}
	return late.Round(10 * time.Millisecond)
}

// scenarioArg is the index of the scenario file among locklab's
// arguments (a .yaml that is no flag's value), or -1.
func scenarioArg(args []string) int {
	for i, a := range args {
		if strings.HasSuffix(a, ".yaml") && (i == 0 || !strings.HasPrefix(args[i-1], "-")) {
			return i
		}
	}
	return -1
}

// stretchedTimes are a scenario's settings that must grow with a fault
// that takes longer: a hold must outlast it, the lease outlast the hold,
// and the run outlast both.
var stretchedTimes = regexp.MustCompile(`(?m)^(\s*(?:hold|ttl|acquire-timeout|duration): (?:uniform:)?)([0-9.]+(?:ms|s|m))(?:-([0-9.]+(?:ms|s|m)))?`)

// stretched writes a copy of the scenario at path whose holds, lease, wait
// and run are longer by by, and returns its path.
func stretched(t *testing.T, path string, by time.Duration) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	longer := func(s string) string {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return (d + by).String()
	}
	n := 0
	s := stretchedTimes.ReplaceAllStringFunc(string(b), func(line string) string {
		m := stretchedTimes.FindStringSubmatch(line)
		n++
		if m[3] == "" {
			return m[1] + longer(m[2])
		}
		return m[1] + longer(m[2]) + "-" + longer(m[3])
	})
	if n == 0 {
		t.Fatalf("%s has no hold, ttl or duration to stretch", path)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// longerHolds is a copy of the shipped Redlock restart scenario whose holds
// (and lease, wait and run) are twice as long: a kill and start of a
// container through the engine over TCP took 9.4 to 11.2 s under two busy
// loops, past the shipped holds of 9-10 s, and every try was undecided
// ("the fault took effect only at 10.4 s, after the holds it struck").
func longerHolds(t *testing.T, path, dir string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{{"hold: uniform:9s-10s", "hold: uniform:19s-20s"}, {"ttl: 20s", "ttl: 40s"},
		{"acquire-timeout: 12s", "acquire-timeout: 24s"}, {"duration: 13s", "duration: 24s"}} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("%s has no %q", path, r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	out := filepath.Join(dir, "redlock-restart-longer-holds.yaml")
	if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// A retry's scenario outlasts the lateness measured: the restart scenario's
// holds, lease, wait and run all grow by it, and the copy still loads.
func TestStretchedScenarioOutlastsALateFault(t *testing.T) {
	out := "redis-setnx-px-lua: undecided: inconclusive: the fault at 0.99 s took effect only at 20.96 s, when the holds it struck had ended\n" +
		"locklab: 1 case(s) could not be verified: inconclusive: the fault at 1.00 s took effect only at 9.03 s, when"
	late := lateBy(out)
	if late != 19970*time.Millisecond {
		t.Fatalf("lateBy = %v, want 19.97s", late)
	}
	if got := lateBy("inconclusive: the lab stalled"); got != 0 {
		t.Fatalf("lateBy of a run with no late fault = %v", got)
	}
	args := []string{"run", "--config", "a.yaml", "--results", "r", "../../scenarios/redis-restart-no-persistence.yaml"}
	i := scenarioArg(args)
	if i != 5 {
		t.Fatalf("scenarioArg = %d, want 5", i)
	}
	s, err := scenario.Load(stretched(t, args[i], late+2*time.Second), all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	for _, c := range []struct {
		what      string
		got, want time.Duration
	}{
		{"shortest hold", w.Hold.A, 29970 * time.Millisecond},
		{"longest hold", w.Hold.B, 30970 * time.Millisecond},
		{"ttl", w.TTL, 41970 * time.Millisecond},
		{"acquire-timeout", w.AcquireTimeout, 24970 * time.Millisecond},
		{"duration", s.Duration, 33970 * time.Millisecond},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

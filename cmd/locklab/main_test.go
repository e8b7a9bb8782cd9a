package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/report"
)

var binary string

// TestMain builds the real binary: these tests run locklab as a user would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "locklab-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "locklab")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// locklab returns a command whose servers live under tmp, so the test can
// find every process it started by its command line.
// enterableTempDir is a test temp dir that other users can enter, as any
// TMPDIR a user would choose: run as root, locklab starts PostgreSQL as the
// postgres user, which must reach its data directory (t.TempDir's own
// directory is private, and PostgreSQL then cannot start: seen failing the
// SIGINT test when the cluster came up before the signal).
func enterableTempDir(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

// catchStallThreshold is the --stall-threshold of the tests that check a
// catch on real servers (the violation a scenario or a cell expects): on a
// CI machine running three test packages at once, locklab's own probe
// wakes 0.12-0.16 s late a few times a minute, and a run whose violation
// overlaps such a wake-up is inconclusive by design (verdict.LabStalled).
// These tests are about the catch; the monitor's own judgement at the
// default threshold is tested in stall_test.go and runner's stalls_test.go.
const catchStallThreshold = "500ms"

func locklab(tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	return cmd
}

// serversUnder lists running processes working in or naming dir (redis
// rewrites its command line, so the working directory is what finds it).
func serversUnder(dir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		b, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if strings.HasPrefix(cwd, dir) || bytes.Contains(b, []byte(dir)) {
			if st, err := os.ReadFile(filepath.Join(p, "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
				continue // a zombie is dead already
			}
			found = append(found, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

func waitNoServers(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := serversUnder(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers left running: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readResults(t *testing.T, resultsDir string) (string, report.Results) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(resultsDir, "*"))
	if len(dirs) != 1 {
		t.Fatalf("want one run dir in %s, got %v", resultsDir, dirs)
	}
	var res report.Results
	b, err := os.ReadFile(filepath.Join(dirs[0], "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	return dirs[0], res
}

func TestBenchEndToEnd(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "results")
	cmd := locklab(tmp, "bench", "--approaches", "redis-setnx-px-lua,mysql-insert-delete",
		"--clients", "1,4", "--duration", "1s", "--results", results)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, want := range []string{"acquires/s", "p99.9", "double grants", "redis-setnx-px-lua", "mysql-insert-delete"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	dir, res := readResults(t, results)
	if !res.Complete || len(res.Runs) != 4 || !res.Verdict.Safe {
		t.Fatalf("results: complete=%v runs=%d verdict=%+v", res.Complete, len(res.Runs), res.Verdict)
	}
	for _, r := range res.Runs {
		if r.Acquired == 0 || r.Acquire.P50 <= 0 || r.DoubleGrants != 0 || r.Linearizable != "yes" {
			t.Errorf("run %s c%d: %+v", r.Approach, r.Clients, r)
		}
		// Four clients on one key: waiters are handed the lock, and each
		// client gets some of it.
		if f := r.Fairness; f.Clients != r.Clients || f.Jain < 1/float64(r.Clients) || f.Jain > 1 || f.LongestWaitUs < 0.9*r.Acquire.Max {
			t.Errorf("run %s c%d: fairness %+v (acquire max %v µs)", r.Approach, r.Clients, f, r.Acquire.Max)
		}
		if handedOff := r.HandOff.Count > 0; handedOff != (r.Clients > 1) || handedOff && r.HandOff.P50 <= 0 {
			t.Errorf("run %s c%d: hand-off %+v", r.Approach, r.Clients, r.HandOff)
		}
	}
	if res.Versions["redis"] == "" || res.Versions["mysql"] == "" {
		t.Errorf("server versions missing: %v", res.Versions)
	}
	for _, f := range []string{history.FileName, "summary.md", "index.html", "latency-acquire-c1.png", "latency-acquire-c4.png",
		"throughput.png", "acquire-redis-setnx-px-lua-c4.hgrm", "release-mysql-insert-delete-c1.hgrm",
		"hand-off-mysql-insert-delete-c4.hgrm", "latency-hand-off-c4.png", "latency-vs-clients.png",
		"timeline-redis-setnx-px-lua-c4.png", "timeline-mysql-insert-delete-c1.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
	// The history alone reproduces the verdict.
	chk, err := exec.Command(binary, "check", filepath.Join(dir, history.FileName)).CombinedOutput()
	if err != nil || !bytes.Contains(chk, []byte("verdict: OK")) {
		t.Fatalf("check: %v\n%s", err, chk)
	}
	waitNoServers(t, tmp)
}

// The drivers' own loggers stay out of locklab's output: a Sentinel client
// logs the master it is told of (164 such lines in one Docker bench), and
// what a failed request means is in the results.
func TestDriversStayQuiet(t *testing.T) {
	tmp := t.TempDir()
	out, err := locklab(tmp, "bench", "--approaches", "redis-sentinel-lua,mysql-for-update", "--clients", "2",
		"--duration", "1s", "--results", filepath.Join(tmp, "results")).CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "redis: ") || strings.HasPrefix(l, "[mysql]") {
			t.Fatalf("a driver wrote to locklab's output: %q\n%s", l, out)
		}
	}
	waitNoServers(t, tmp)
}

func TestBenchSIGINTLeavesValidResultsAndNoServers(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "results")
	cmd := locklab(tmp, "bench", "--approaches", "redis-setnx-px-lua,mysql-insert-delete",
		"--clients", "2", "--duration", "30s", "--results", results)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // also when the test fails part-way
	// Interrupt once the first run is recording: soon on an idle machine;
	// on a starved one the servers' start alone took more than 30 s.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		hs, _ := filepath.Glob(filepath.Join(results, "*", history.FileName))
		if len(hs) == 1 {
			if st, err := os.Stat(hs[0]); err == nil && st.Size() > 10_000 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("bench never started recording:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("bench did not stop within 20s of SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Errorf("exit code %d, want %d\n%s", code, exitInterrupted, out.String())
	}
	dir, res := readResults(t, results)
	if res.Complete || !strings.Contains(res.Note, "interrupted") {
		t.Errorf("results must be marked incomplete: complete=%v note=%q", res.Complete, res.Note)
	}
	if len(res.Runs) != 1 || res.Runs[0].Complete || res.Runs[0].Acquired == 0 {
		t.Errorf("want the interrupted run recorded as incomplete: %+v", res.Runs)
	}
	// Every history line is whole.
	sc := bufio.NewScanner(bytes.NewReader(historyBytes(t, filepath.Join(dir, history.FileName))))
	lines := 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("history line %d is not valid JSON: %q", lines, sc.Text())
		}
	}
	waitNoServers(t, tmp)
	noTempDirsLeft(t, tmp)
}

// noTempDirsLeft fails when a locklab temp dir (servers' data) is left in
// tmp, the TMPDIR locklab ran with.
func noTempDirsLeft(t *testing.T, tmp string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(tmp, "locklab-*")); len(left) != 0 {
		t.Errorf("temp dirs left: %v", left)
	}
}

func TestSIGKILLOfLocklabKillsItsServers(t *testing.T) {
	tmp := t.TempDir()
	cmd := locklab(tmp, "cluster", "up", "--backends", "redis,mysql")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // also when the test fails part-way
	if !clusterUp(stdout) {
		cmd.Process.Kill()
		t.Fatal("cluster up never became ready")
	}
	if n := len(serversUnder(tmp)); n != 6 {
		t.Fatalf("want 6 servers running, found %d", n)
	}
	cmd.Process.Kill() // a crash: no chance to clean up
	cmd.Wait()
	waitNoServers(t, tmp)
	// The next start removes the dead run's temp dir.
	if stale, _ := filepath.Glob(filepath.Join(tmp, "locklab-*")); len(stale) != 1 {
		t.Fatalf("want the crashed run's temp dir, got %v", stale)
	}
	out, err := locklab(tmp, "bench", "--approaches", "redis-setnx-px-lua", "--clients", "1", "--duration", "200ms",
		"--results", filepath.Join(tmp, "r")).CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	if stale, _ := filepath.Glob(filepath.Join(tmp, "locklab-*")); len(stale) != 0 {
		t.Fatalf("stale temp dirs not removed: %v", stale)
	}
}

func TestBadInputExitCodes(t *testing.T) {
	tmp := t.TempDir()
	badYAML := filepath.Join(tmp, "bad.yaml")
	os.WriteFile(badYAML, []byte("redis: [127.0.0.1:1\n"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown approach", []string{"bench", "--approaches", "nope"}, exitUsage, `unknown approach "nope" (known: `},
		{"bad clients", []string{"bench", "--clients", "0"}, exitUsage, "not a positive integer"},
		{"bad hold", []string{"bench", "--hold", "gauss:1ms"}, exitUsage, "unknown kind"},
		{"bad workload", []string{"bench", "--workload", "nope"}, exitUsage, `unknown workload "nope"`},
		{"bad duration", []string{"bench", "--duration", "soon"}, exitUsage, `--duration "soon": want a duration with its unit, like 30s, 500ms or 2m`},
		{"a duration without its unit", []string{"run", "--duration", "3", "../../scenarios/gc-pause-past-ttl.yaml"}, exitUsage, `--duration "3": want a duration with its unit, like 30s, 500ms or 2m (3s for 3 seconds)`},
		{"a results path that is a file", []string{"bench", "--approaches", "redis-setnx-px-lua", "--results", writeFile(t, tmp, "a-file", "")}, exitUsage,
			"not a directory (want a folder locklab may write in)"},
		{"a negative seed", []string{"run", "--seed", "-1", "../../scenarios/gc-pause-past-ttl.yaml"}, exitUsage, `--seed "-1": want a whole number, 0 or more`},
		{"external without config", []string{"bench", "--cluster", "external"}, exitUsage, "needs --config"},
		{"malformed config", []string{"bench", "--cluster", "external", "--config", badYAML,
			"--results", filepath.Join(tmp, "r")}, exitUsage, "malformed YAML"},
		{"unreachable server", []string{"bench", "--cluster", "external", "--config", writeFile(t, tmp, "down.yaml", "redis: [127.0.0.1:1]\n"),
			"--backends", "redis-setnx-px-lua", "--results", filepath.Join(tmp, "r2"), "--junit", filepath.Join(tmp, "down.xml")}, exitInfra, "127.0.0.1:1 unreachable"},
		{"unknown command", []string{"frob"}, exitUsage, `unknown command "frob"`},
		{"docker-only scenario embedded", []string{"run", "--results", filepath.Join(tmp, "r3"), "../../scenarios/consensus-leader-isolated.yaml"},
			exitUsage, "run it with --cluster docker"},
		{"image without docker", []string{"bench", "--image", "local"}, exitUsage, "--image goes with --cluster docker"},
		{"bad image", []string{"bench", "--cluster", "docker", "--image", "nginx"}, exitUsage, `--image "nginx": want local, public or SERVER=IMAGE`},
		{"isolate the Sentinel topology in docker", []string{"run", "--cluster", "docker", "--image", "local", "--results", filepath.Join(tmp, "r4"),
			writeFile(t, tmp, "sentinel-isolate.yaml", "name: sentinel-isolate\napproaches: [redis-sentinel-lua]\n"+
				"workload: {kind: mutex, clients: 2, keys: 1, ttl: 5s}\nduration: 3s\nservers: {in: docker}\n"+
				"faults:\n  - fault: server-isolate\n    target: {node: leader, server: redis-sentinel}\n    at: 1s\n    for: 1s\n")},
			exitUsage, "host's network"},
		{"bad parallel", []string{"run", "--parallel", "-2", "../../scenarios/server-pause.yaml"}, exitUsage, "--parallel -2: must not be negative"},
		{"a shard past N", []string{"matrix", "--faults", "none", "--shard", "5/4"}, exitUsage, "locklab matrix: --shard 5/4: want 1 <= K <= N"},
		{"a shard without N", []string{"bench", "--shard", "2"}, exitUsage, `locklab bench: --shard "2": want K/N`},
		{"a shard from the CI's variables, unset", []string{"matrix", "--faults", "none", "--shard", "ci"}, exitUsage, "ci: none of GitLab (parallel: N)'s CI_NODE_INDEX/CI_NODE_TOTAL"},
		{"more shards than cases", []string{"run", "--approach", "redis-setnx-px-lua", "--shard", "2/2", "../../scenarios/server-pause.yaml"}, exitUsage,
			"no case falls to this shard"},
		{"merge without folders", []string{"merge", "--out", filepath.Join(tmp, "m")}, exitUsage, "want the shards' results folders"},
		{"merge of a folder that is no shard", []string{"merge", tmp, "--out", filepath.Join(tmp, "m")}, exitUsage, "no shard.json: not the results folder of a run with --shard K/N"},
		{"check missing file", []string{"check", filepath.Join(tmp, "none.jsonl")}, exitUsage, "no such file"},
		{"check corrupt file", []string{"check", writeFile(t, tmp, "bad.jsonl", "{\"proc\":1,\"type\":\"ok\",\"f\":\"acquire\",\"t\":1}\n{oops\n")}, exitUsage, "line 2"},
		{"check with an unknown model", []string{"check", "--model", "knossos", "../../checker/testdata/ok.json"}, exitUsage,
			`locklab check: --model: unknown model "knossos" (want mutex or lease)`},
		{"check with an empty model", []string{"check", "--model=", "../../checker/testdata/ok.json"}, exitUsage, "want mutex or lease"},
		{"explore without an approach", []string{"explore"}, exitUsage, "--approach: which approach to explore"},
		{"explore an unknown approach", []string{"explore", "--approach", "nope", "--results", filepath.Join(tmp, "r5")}, exitUsage, `unknown approach "nope" (known: `},
		{"explore a fault it cannot take", []string{"explore", "--approach", "etcd-lease", "--faults", "server-clock", "--results", filepath.Join(tmp, "r6")},
			exitUsage, "--faults: server-clock cannot act on etcd-lease here"},
		{"explore an unknown fault", []string{"explore", "--approach", "redis-setnx-px-lua", "--faults", "meteor"}, exitUsage, `--faults: unknown fault "meteor"`},
		{"explore without a budget", []string{"explore", "--approach", "redis-setnx-px-lua", "--budget", "0s"}, exitUsage, "--budget 0s: must be positive"},
		{"explore an unreachable server", []string{"explore", "--approach", "redis-setnx-px-lua", "--cluster", "external", "--config", writeFile(t, tmp, "down2.yaml", "redis: [127.0.0.1:1]\n"),
			"--results", filepath.Join(tmp, "r7"), "--junit", filepath.Join(tmp, "explore-down.xml")}, exitInfra, "127.0.0.1:1 unreachable"},
		{"conform an unknown approach", []string{"conform", "nope"}, exitUsage, `unknown approach "nope" (known: `},
		{"conform without an approach", []string{"conform"}, exitUsage, "want one argument: locklab conform APPROACH"},
		{"conform with a bad --run", []string{"conform", "redis-setnx-px-lua", "--run", "("}, exitUsage, "--run: error parsing regexp"},
		// Known only once the suite ran: no test is not a pass.
		{"conform with a --run that matches nothing", []string{"conform", "redis-setnx-px-lua", "--run", "NoSuchTest"}, exitUsage, `--run "NoSuchTest" matches no test`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := locklab(tmp, tt.args...)
			cmd.Stderr = &stderr
			cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if !strings.Contains(msg, tt.msg) || strings.Count(msg, "\n") > 1 {
				t.Errorf("stderr %q, want one line with %q", msg, tt.msg)
			}
			if strings.Contains(msg, "panic") {
				t.Errorf("panicked: %s", msg)
			}
			// A gate whose servers never came up still reports, as one
			// error case with the reason.
			if i := slices.Index(tt.args, "--junit"); i >= 0 {
				suite, b := readJUnit(t, tt.args[i+1])
				if suite.Tests != 1 || suite.Errors != 1 || len(suite.Cases) != 1 || suite.Cases[0].Error == nil ||
					!strings.Contains(suite.Cases[0].Error.Message, tt.msg) {
					t.Fatalf("JUnit of a run that never started: %+v\n%s", suite, b)
				}
			}
			// None of these runs anything: no results folder, whether the
			// input was refused or the servers never came up.
			if i := slices.Index(tt.args, "--results"); i >= 0 {
				if left, _ := filepath.Glob(filepath.Join(tt.args[i+1], "*")); len(left) != 0 {
					t.Errorf("a run that never started left results behind: %v", left)
				}
			}
		})
	}
}

// junitSuite is what the tests read of a JUnit file.
type junitSuite struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Cases    []struct {
		Name    string        `xml:"name,attr"`
		Failure *junitMessage `xml:"failure"`
		Error   *junitMessage `xml:"error"`
	} `xml:"testcase"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
}

// readJUnit parses the JUnit file at path; it returns the file too, for
// failure messages.
func readJUnit(t *testing.T, path string) (junitSuite, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("junit: %v", err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(b, &suite); err != nil {
		t.Fatalf("junit: %v\n%s", err, b)
	}
	return suite, b
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckFindsDoubleGrant(t *testing.T) {
	h := writeFile(t, t.TempDir(), "h.jsonl", strings.Join([]string{
		`{"proc":1,"type":"ok","f":"acquire","key":"k1","t":1100000000}`,
		`{"proc":3,"type":"ok","f":"acquire","key":"k1","t":1204000000}`,
		`{"proc":1,"type":"invoke","f":"release","key":"k1","t":1530000000}`,
		`{"proc":3,"type":"invoke","f":"release","key":"k1","t":1600000000}`,
	}, "\n"))
	cmd := exec.Command(binary, "check", h)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitUnsafe || !bytes.Contains(out, []byte("client 3 acquired k1 at 0.104000 s while client 1 held it since 0.000000 s")) {
		t.Fatalf("exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	// The header counts the key it then lists (it once said "0 keys").
	if !bytes.Contains(out, []byte(h+": 4 events, 1 keys\n")) {
		t.Fatalf("header does not count 4 events and 1 key:\n%s", out)
	}
}

func TestCheckFormatsAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, content string
		args                []string
		code                int
		out                 string
	}{
		{"edn clean", "h.edn", `[{:process 0, :type :invoke, :f :acquire, :value nil, :time 1}
{:process 0, :type :ok, :f :acquire, :value nil, :time 2}
{:process 0, :type :invoke, :f :release, :value nil, :time 3}
{:process 0, :type :ok, :f :release, :value nil, :time 4}]`, nil, exitOK, "verdict: OK"},
		{"edn double grant", "bad.edn", `{:process 0, :type :invoke, :f :acquire, :time 1}
{:process 0, :type :ok, :f :acquire, :time 2}
{:process 1, :type :invoke, :f :acquire, :time 3}
{:process 1, :type :ok, :f :acquire, :time 4}`, []string{"--html", filepath.Join(dir, "viz")}, exitUnsafe, "NOT linearizable"},
		{"jepsen json clean, pretty-printed", "h.json", `[
  {"index": 0, "process": 0, "type": "invoke", "f": "acquire", "time": 1},
  {"index": 1, "process": 0, "type": "ok", "f": "acquire", "time": 2},
  {"index": 2, "process": "nemesis", "type": "info", "f": "start-partition", "time": 3},
  {"index": 3, "process": 0, "type": "invoke", "f": "release", "time": 4},
  {"index": 4, "process": 0, "type": "ok", "f": "release", "time": 5}
]`, nil, exitOK, "verdict: OK"},
		{"jepsen json lines, phantom release", "bad.json", `{"process": 0, "type": "invoke", "f": "acquire", "time": 1}
{"process": 0, "type": "ok", "f": "acquire", "time": 2}
{"process": 1, "type": "invoke", "f": "release", "time": 3}
{"process": 1, "type": "ok", "f": "release", "time": 4}`, nil, exitUnsafe, "PHANTOM RELEASE"},
		{"jsonl forced as edn is malformed", "h.jsonl", `{"proc":0,"type":"ok","f":"acquire","t":1}`, []string{"--format", "edn"}, exitUsage, "line 1: "},
		{"unknown format", "h2.jsonl", `{"proc":0,"type":"ok","f":"acquire","t":1}`, []string{"--format", "xml"}, exitUsage, `unknown history format "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, tt.file, tt.content)
			cmd := exec.Command(binary, append([]string{"check", path}, tt.args...)...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != tt.code || !bytes.Contains(out, []byte(tt.out)) {
				t.Fatalf("exit %d (want %d):\n%s", code, tt.code, out)
			}
		})
	}
	if viz, _ := filepath.Glob(filepath.Join(dir, "viz", "*.html")); len(viz) != 1 {
		t.Fatalf("visualization files: %v", viz)
	}
}

// clusterUp reads `locklab cluster up`'s output until it says the servers
// are up (true) or ends; the rest of the output is drained.
func clusterUp(stdout io.Reader) bool {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Ctrl-C stops them") {
			go func() {
				for sc.Scan() {
				}
			}()
			return true
		}
	}
	return false
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
)

// containersOf lists the containers (running or not) a locklab process made,
// as `docker ps -a` shows them.
func containersOf(t *testing.T, pid int) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=locklab.owner="+strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// TestDocker runs the tests that start containers in two groups side by
// side, each group's one after another: their container starts and
// restarts queue on the one engine (with four at once a Redis container's
// restart took longer than the scenario's holds), and a group takes one of
// -parallel's slots, where six tests waiting their turn on a lock held
// every slot and kept the others waiting. One after another they took
// 334 s with two busy loops beside the suite; the groups are about even
// (185 s and 149 s of it).
func TestDocker(t *testing.T) {
	t.Parallel()
	type test struct {
		name string
		test func(*testing.T)
	}
	for _, group := range []struct {
		name  string
		tests []test
	}{
		{"redis", []test{
			{"ServersOnOtherHosts", dockerServersOnOtherHosts},
			{"RunShowsClockJumpDoubleGrant", dockerRunShowsClockJumpDoubleGrant},
			{"StallProbeReportsAndDiesWithLocklab", dockerStallProbeReportsAndDiesWithLocklab},
			{"SIGINTAndSIGKILLLeaveNoContainer", dockerSIGINTAndSIGKILLLeaveNoContainer},
		}},
		{"others", []test{
			{"ComposeFileRunsWithLocalImages", dockerComposeFileRunsWithLocalImages},
			{"EngineOverTCP", dockerEngineOverTCP},
			{"RunIsolatesTheLeader", dockerRunIsolatesTheLeader},
		}},
	} {
		t.Run(group.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range group.tests {
				t.Run(tc.name, tc.test)
			}
		})
	}
}

func waitNoContainers(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := containersOf(t, pid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after locklab ended, its containers are still there: %v", within, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A Redis server's clock jump (libfaketime in the image, the offset file
// mounted from the host) expires the lock under its holder: granted twice
// (the run fails when it is not), and results.json says where it ran and on
// which image. A container's restart, which goes through the engine's API
// as this does, is shown through the engine over TCP (dockerEngineOverTCP).
func dockerRunShowsClockJumpDoubleGrant(t *testing.T) {
	dockerDoubleGrant(t, nil, "redis-server-clock-jump")
}

// dockerDoubleGrant runs a shipped scenario on redis-setnx-px-lua in
// containers (the engine named in env, or the local one) and wants its
// double grant.
func dockerDoubleGrant(t *testing.T, env []string, scenario string) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "results")
	code, out, pid := runDecided(t, append([]string{"TMPDIR=" + tmp}, env...), results, "run", "--cluster", "docker", "--image", "local", "--approach", "redis-setnx-px-lua",
		"--results", results, "--stall-threshold", catchStallThreshold, filepath.Join("..", "..", "scenarios", scenario+".yaml"))
	if code != exitOK {
		t.Fatalf("locklab run: exit %d\n%s", code, out)
	}
	_, res := readResults(t, results)
	var cfg map[string]any
	b, _ := json.Marshal(res.Config)
	json.Unmarshal(b, &cfg)
	if cfg["cluster"] != "docker" {
		t.Errorf("results.json config.cluster = %v, want docker", cfg["cluster"])
	}
	if v := res.Versions["redis"]; !strings.Contains(v, "image locklab/redis:bookworm") {
		t.Errorf("results.json versions.redis = %q, want the image named", v)
	}
	if len(res.Runs) != 1 || res.Runs[0].DoubleGrants == 0 {
		t.Errorf("want one run with a double grant, got %+v\n%s", res.Runs, out)
	}
	waitNoContainers(t, pid, 10*time.Second)
}

// A real partition, in containers only: the shipped scenario isolates the
// ZooKeeper leader (docker network disconnect) and joins it back, and the
// history records both.
func dockerRunIsolatesTheLeader(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "results")
	for try := 1; ; try++ {
		// An undecided run (the containers starved with two busy loops
		// beside the suite: the lab saw them stand still 16 times, up to
		// 7.3 s) is run again, as runDecided does; so is one whose
		// isolation never took effect (no leader told in time by starved
		// members): it asked nothing of the lock, and says so.
		code, out, _ := runDecided(t, []string{"TMPDIR=" + tmp}, results, "run", "--cluster", "docker", "--image", "local", "--approach", "zk-ephemeral",
			"--results", results, filepath.Join("..", "..", "scenarios", "consensus-leader-isolated.yaml"))
		if code != exitOK {
			t.Fatalf("locklab run: exit %d\n%s", code, out)
		}
		if strings.Contains(out, "never took effect") && try < 3 {
			t.Logf("try %d: the isolation never took effect; again:\n%s", try, out)
			if err := os.RemoveAll(results); err != nil {
				t.Fatal(err)
			}
			continue
		}
		dir, _ := readResults(t, results)
		if !historyHasFault(t, dir, "server-isolate") {
			t.Logf("locklab run:\n%s", out)
		}
		return
	}
}

// historyHasFault checks that the run in dir recorded an injection and a
// heal of fault, and says whether it did.
func historyHasFault(t *testing.T, dir, fault string) bool {
	t.Helper()
	h := historyBytes(t, filepath.Join(dir, history.FileName))
	ok := true
	for _, want := range []string{`"op":"start","fault":"` + fault + `"`, `"op":"stop","fault":"` + fault + `"`} {
		if !strings.Contains(string(h), want) {
			t.Errorf("the history has no %s event", want)
			ok = false
		}
	}
	return ok
}

// Neither a Ctrl-C nor a SIGKILL of locklab leaves a container behind.
func dockerSIGINTAndSIGKILLLeaveNoContainer(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			// The Sentinel topology's containers are on the host's network:
			// they must go as the others do.
			cmd := locklab(tmp, "cluster", "up", "--cluster", "docker", "--image", "local", "--servers", "redis,mysql,redis-sentinel")
			signalDockerCluster(t, cmd, sig, 11)
		})
	}
}

// signalDockerCluster starts cmd (a `cluster up --cluster docker`), waits
// until its containers (want of them) are up, signals it and waits until
// they are gone.
func signalDockerCluster(t *testing.T, cmd *exec.Cmd, sig syscall.Signal, want int) {
	t.Helper()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !clusterUp(stdout) {
		t.Fatal("cluster up --cluster docker never became ready")
	}
	pid := cmd.Process.Pid
	if n := len(containersOf(t, pid)); n != want {
		t.Fatalf("want %d containers running, found %d", want, n)
	}
	cmd.Process.Signal(sig)
	cmd.Wait()
	waitNoContainers(t, pid, 30*time.Second)
}

// In Docker mode a probe runs in a container beside the servers: stopped
// (docker pause) for 1.5 s, as a starved container stands still, its stall
// reaches the history as the containers', at that time; and its container
// goes with locklab, killed outright.
func dockerStallProbeReportsAndDiesWithLocklab(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "results")
	cmd := locklab(tmp, "bench", "--cluster", "docker", "--image", "local", "--approaches", "redis-setnx-px-lua",
		"--clients", "2", "--duration", "60s", "--results", results)
	hist, out := startRunning(t, cmd, results)
	pid := cmd.Process.Pid
	var probe string
	for deadline := time.Now().Add(10 * time.Second); probe == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ids, err := exec.Command("docker", "ps", "-q", "--filter", "label=locklab.owner="+strconv.Itoa(pid), "--filter", "name=stall-probe").Output()
		if err != nil {
			t.Fatalf("docker ps: %v", err)
		}
		probe = strings.TrimSpace(string(ids))
	}
	if probe == "" {
		t.Fatalf("no stall probe container running beside the servers\n%s", out.String())
	}
	docker := func(verb string) func() error {
		return func() error {
			if b, err := exec.Command("docker", verb, probe).CombinedOutput(); err != nil {
				return fmt.Errorf("docker %s: %v: %s", verb, err, b)
			}
			return nil
		}
	}
	st := stopWith(t, 1500*time.Millisecond, docker("pause"), docker("unpause"))
	var stalls []recordedStall
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		// A shorter stall of the containers (a loaded machine) may come
		// first: wait for the one the pause made.
		if stalls = stallsIn(t, hist); func() bool { _, ok := covering(stalls, "containers", st); return ok }() {
			break
		}
	}
	stalledThen(t, stalls, "containers", st)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitNoContainers(t, pid, 30*time.Second)
}

// composeCommand is Docker Compose as this machine has it: the docker
// plugin, or the older docker-compose program.
func composeCommand(t *testing.T) []string {
	t.Helper()
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	t.Fatal("neither 'docker compose' nor docker-compose is installed (scripts/deps.sh installs docker-compose)")
	return nil
}

// composeDown takes the project down. Its containers must go; the network
// Docker could not remove for an endpoint it still counts with no container
// on it (once, beside the other group's containers, "has active endpoints"
// with none listed) is Docker's own, said and left.
func composeDown(t *testing.T, project string, dc func(args ...string) *exec.Cmd) {
	t.Helper()
	var out []byte
	var err error
	for try := 1; try <= 3; try++ {
		if out, err = dc("down", "-v").CombinedOutput(); err == nil {
			return
		}
		time.Sleep(2 * time.Second)
	}
	left, lerr := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output()
	if lerr == nil && len(bytes.TrimSpace(left)) == 0 && bytes.Contains(out, []byte("has active endpoints")) {
		t.Logf("compose down: no container left, but Docker kept the project's network for an endpoint it still counts: %v", err)
		return
	}
	t.Errorf("compose down: %v\n%s", err, out)
}

// compose.yaml, with its images pointed at the local ones by its variables,
// brings up servers that `locklab bench --cluster external --config
// examples/compose-cluster.yaml` runs every kind of approach against.
func dockerComposeFileRunsWithLocalImages(t *testing.T) {
	tmp := t.TempDir()
	compose := composeCommand(t)
	project := "locklab-compose-test-" + strconv.Itoa(os.Getpid())
	// docker-compose v1 gives up on an engine call after 60 s; a CI run's
	// engine, starting other tests' containers, took longer.
	env := append(os.Environ(), "COMPOSE_HTTP_TIMEOUT=600")
	for _, b := range []impls.Server{impls.Redis, impls.MySQL, impls.ZooKeeper, impls.Postgres, impls.Etcd} {
		env = append(env, cluster.ComposeImageVar(b)+"="+cluster.LocalImages()[b])
	}
	dc := func(args ...string) *exec.Cmd {
		cmd := exec.Command(compose[0], append(append(compose[1:], "-p", project, "-f", "../../compose.yaml"), args...)...)
		cmd.Env = env
		return cmd
	}
	if out, err := dc("up", "-d").CombinedOutput(); err != nil {
		dc("down", "-v").Run()
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	t.Cleanup(func() { composeDown(t, project, dc) })
	// Wait until every server answers, as a user would before a bench.
	ctx := context.Background()
	cfg, err := cluster.LoadExternalConfig(ctx, "../../examples/compose-cluster.yaml", false)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := cluster.ConnectExternal(ctx, cfg)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("compose.yaml's servers not up within 2 minutes: %v", err)
		}
		time.Sleep(time.Second)
	}
	results := filepath.Join(tmp, "results")
	// A bench left undecided is run again (with two busy loops beside the
	// suite and the other group's containers starting, both redis-redlock
	// clients' first rounds ran past the node timeout and retired them:
	// nobody granted in the second).
	code, out, _ := runDecided(t, []string{"TMPDIR=" + tmp}, results, "bench", "--cluster", "external", "--config", "../../examples/compose-cluster.yaml",
		"--approaches", "redis-setnx-px-lua,redis-redlock,mysql-insert-delete,zk-ephemeral,pg-advisory,etcd-lease",
		"--clients", "2", "--duration", "1s", "--results", results)
	if code != exitOK {
		t.Fatalf("bench against compose.yaml's servers: exit %d\n%s", code, out)
	}
	_, res := readResults(t, results)
	if len(res.Runs) != 6 {
		t.Fatalf("want 6 runs, got %d\n%s", len(res.Runs), out)
	}
	for _, r := range res.Runs {
		if r.Acquired == 0 {
			t.Errorf("%s acquired nothing on compose.yaml's servers", r.Case)
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// A shipped scenario runs on the Docker cluster as on the embedded one: a
// Redis node without persistence, its container killed and started again
// while a client holds the lock, grants it twice (the run fails when it
// does not), and results.json says where it ran and on which image.
func TestDockerRunShowsRestartDoubleGrant(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "results")
	cmd := locklab(tmp, "run", "--cluster", "docker", "--image", "local", "--approach", "redis-setnx-px-lua",
		"--results", results, filepath.Join("..", "..", "scenarios", "redis-restart-no-persistence.yaml"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("locklab run: %v\n%s", err, out)
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
	waitNoContainers(t, cmd.Process.Pid, 10*time.Second)
}

// Neither a Ctrl-C nor a SIGKILL of locklab leaves a container behind.
func TestDockerSIGINTAndSIGKILLLeaveNoContainer(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := locklab(tmp, "cluster", "up", "--cluster", "docker", "--image", "local", "--servers", "redis,mysql")
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
			if n := len(containersOf(t, pid)); n != 6 {
				t.Fatalf("want 6 containers running, found %d", n)
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			waitNoContainers(t, pid, 30*time.Second)
		})
	}
}

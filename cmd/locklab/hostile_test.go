package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/history"
)

// Each case is a defect found by probing the CLI as a hostile user would
// (issue 13); each must end at once with the documented exit code.
func TestHostileArguments(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "r")
	cfg := filepath.Join(tmp, "bad.yaml")
	os.WriteFile(cfg, []byte("redis: [127.0.0.1:99999]\n"), 0o644)
	noPostgres := filepath.Join(tmp, "nopg.yaml")
	os.WriteFile(noPostgres, []byte("redis: [127.0.0.1:16379]\n"), 0o644)
	history := filepath.Join(tmp, "h.jsonl")
	os.WriteFile(history, []byte(`{"proc":1,"type":"invoke","f":"acquire","key":"k","t":1}`+"\n"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want string // in the output
	}{
		{"help help", []string{"help", "help"}, exitOK, "usage:"},
		{"check negative time limit", []string{"check", "--time-limit", "-5s", history}, exitUsage, "--time-limit -5s: must be positive"},
		{"approach whose server the config lacks", []string{"bench", "--cluster", "external", "--config", noPostgres,
			"--approaches", "pg-advisory", "--results", results}, exitUsage, "lists no postgres servers"},
		{"help -h", []string{"help", "-h"}, exitOK, "usage:"},
		{"help --help", []string{"help", "--help"}, exitOK, "usage:"},
		{"-h -h", []string{"-h", "-h"}, exitOK, "usage:"},
		{"--help --help", []string{"--help", "--help"}, exitOK, "usage:"},
		{"help cluster up", []string{"help", "cluster", "up"}, exitOK, "-servers"},
		{"help cluster", []string{"help", "cluster"}, exitOK, "-servers"},
		{"help run", []string{"help", "run"}, exitOK, "-approach"},
		{"help nonsense", []string{"help", "nonsense"}, exitUsage, `no command "nonsense"`},
		{"help bench extra", []string{"help", "bench", "extra"}, exitUsage, "no command"},
		{"list extra", []string{"list", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"cluster up extra", []string{"cluster", "up", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"negative acquire timeout", []string{"bench", "--acquire-timeout", "-1s", "--results", results}, exitUsage, "--acquire-timeout -1s: must be positive"},
		{"zero acquire timeout", []string{"bench", "--acquire-timeout", "0", "--results", results}, exitUsage, "must be positive"},
		{"zero ttl", []string{"bench", "--ttl", "0", "--results", results}, exitUsage, "--ttl 0s: must be positive"},
		{"zero duration", []string{"bench", "--duration", "0", "--results", results}, exitUsage, "must be positive"},
		{"port out of range", []string{"bench", "--cluster", "external", "--config", cfg, "--results", results}, exitUsage, "is not a port"},
		{"config is /dev/zero", []string{"bench", "--cluster", "external", "--config", "/dev/zero", "--results", results}, exitUsage, "larger than"},
		{"cluster up usage lists every server kind", []string{"help", "cluster", "up"}, exitOK, "redis (independent redis-server masters, 5); mysql (one MariaDB server, 1); zookeeper (a ZooKeeper ensemble, 3); postgres (one PostgreSQL server, 1); etcd (an etcd cluster, 3); redis-sentinel"},
		{"edn history is /dev/zero", []string{"check", "--format", "edn", "/dev/zero"}, exitUsage, "longer than 1048576 bytes"},
		{"jepsen-json history is /dev/zero", []string{"check", "--format", "jepsen-json", "/dev/zero"}, exitUsage, "operation 1"},
		{"jsonl history is /dev/zero", []string{"check", "/dev/zero"}, exitUsage, "line 1: bufio.Scanner: token too long"},
		{"cluster --help", []string{"cluster", "--help"}, exitOK, "usage: locklab cluster up"},
		{"cluster -h", []string{"cluster", "-h"}, exitOK, "usage: locklab cluster up"},
		{"cluster down", []string{"cluster", "down"}, exitUsage, "want 'locklab cluster up"},
		{"adapt -help", []string{"adapt", "-help"}, exitOK, "usage: locklab adapt APPROACH"},
		{"a mistyped approach", []string{"bench", "--approaches", "redis-setnx-px-lau", "--results", results}, exitUsage,
			`unknown approach "redis-setnx-px-lau": did you mean "redis-setnx-px-lua"?`},
		{"a mistyped approach to run", []string{"run", "--approach", "etcd-leases", "--results", results, "../../scenarios/gc-pause-past-ttl.yaml"}, exitUsage,
			`did you mean "etcd-lease"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := locklab(tmp, tt.args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running after 20 s")
			}
			if got := cmd.ProcessState.ExitCode(); got != tt.code {
				t.Fatalf("exit %d, want %d\n%s", got, tt.code, out.String())
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Fatalf("output does not contain %q:\n%s", tt.want, out.String())
			}
			if _, err := os.Stat(results); !os.IsNotExist(err) {
				t.Fatal("a results folder was created for bad usage")
			}
		})
	}
}

func TestListToAFullDiskFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := locklab(t.TempDir(), "list", "--json")
	cmd.Stdout = f
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("exit: %v, want a failure; stderr: %s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "write") {
		t.Fatalf("stderr does not say the write failed: %s", errOut.String())
	}
}

// SIGHUP (the terminal closed) is handled like Ctrl-C: exit 130, results
// kept, no server left.
func TestBenchSIGHUPIsAnInterrupt(t *testing.T) {
	tmp := t.TempDir()
	results := filepath.Join(tmp, "r")
	cmd := locklab(tmp, "bench", "--approaches", "redis-setnx-px-lua", "--clients", "1", "--duration", "20s", "--results", results)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "results.json written", 30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(results, "*", history.FileName))
		return len(m) == 1
	})
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGHUP)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want %d", err, exitInterrupted)
	}
	_, res := readResults(t, results)
	if res.Complete || !strings.Contains(res.Note, "interrupted") {
		t.Fatalf("complete=%v note=%q", res.Complete, res.Note)
	}
	waitNoServers(t, tmp)
	noTempDirsLeft(t, tmp)
}

// Ctrl-C while the servers are still starting is an interrupt (130), not a
// server failure (3), however the cut-short start reads.
func TestSIGINTDuringClusterStartIsAnInterrupt(t *testing.T) {
	for _, after := range []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond, 2500 * time.Millisecond} {
		tmp := enterableTempDir(t) // PostgreSQL runs as its own user
		results := filepath.Join(tmp, "r")
		cmd := locklab(tmp, "bench", "--approaches", "redis-redlock,mysql-for-update,zk-sequential,etcd-lease,pg-advisory",
			"--clients", "1", "--duration", "3s", "--results", results)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The time counts from the first server process: on a loaded
		// machine locklab took more than 300 ms to reach its signal
		// handler, and a SIGINT before it is Go's default (killed by
		// the signal, with nothing started to clean up).
		deadline := time.Now().Add(15 * time.Second)
		started := func() bool {
			for _, p := range serversUnder(tmp) {
				if !strings.Contains(p, binary) { // locklab names tmp too
					return true
				}
			}
			return false
		}
		for !started() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(after)
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
			t.Fatalf("SIGINT %v after the first server started: exit %v, want %d\n%s", after, err, exitInterrupted, out.String())
		}
		_, res := readResults(t, results)
		if res.Complete || res.FinishedAt.IsZero() || !strings.Contains(res.Note, "interrupted") {
			t.Fatalf("after %v: complete=%v finished=%v note=%q", after, res.Complete, res.FinishedAt, res.Note)
		}
		if strings.Contains(out.String(), "not healthy") || strings.Contains(out.String(), "signal: killed") {
			t.Errorf("after %v: an interrupt reads like a server failure:\n%s", after, out.String())
		}
		waitNoServers(t, tmp)
		noTempDirsLeft(t, tmp)
	}
}

// A disk that fills during a run (here: a file-size limit, which fails
// writes as a full disk does) is an infrastructure failure said out loud:
// exit 3, the failed write named, and a results.json that parses, marked
// incomplete with the reason, beside the verdict that was printed.
func TestFullDiskDuringBenchIsReported(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatal("prlimit (util-linux) is needed to limit file sizes: ", err)
	}
	tmp := t.TempDir()
	results := filepath.Join(tmp, "r")
	// The compressed history takes about 27 bytes an acquire: 8 KB is
	// 300 acquires, 5 s at 60 a second, however starved the machine (140 a
	// second beside two busy loops and a test suite, when 20 KB was not
	// reached). results.json is about 3 KB.
	cmd := exec.Command(prlimit, "--fsize=8000", binary, "bench", "--approaches", "redis-setnx-px-lua", "--clients", "1",
		"--duration", "5s", "--results", results)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitInfra {
		t.Fatalf("exit %d, want %d\n%s", code, exitInfra, out)
	}
	if !strings.Contains(string(out), "history: write") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("the failed write is not named:\n%s", out)
	}
	if !strings.Contains(string(out), "as expected") {
		t.Fatalf("no verdict printed:\n%s", out)
	}
	dir, res := readResults(t, results)
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		if info, err := f.Info(); err == nil && info.Size() == 0 {
			t.Errorf("%s is empty: a file that could not be written must not be left as a stub", f.Name())
		}
	}
	if res.Complete || !strings.Contains(res.Note, "history: write") {
		t.Fatalf("results.json: complete=%v note=%q, want incomplete naming the failed write", res.Complete, res.Note)
	}
	waitNoServers(t, tmp)
}

// help bench lists the default approaches once: the deprecated --backends
// shares --approaches' value and shows no default of its own.
func TestHelpListsTheDefaultApproachesOnce(t *testing.T) {
	for _, topic := range [][]string{{"help", "bench"}, {"help", "cluster", "up"}} {
		out, err := locklab(t.TempDir(), topic...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", topic, err, out)
		}
		for _, list := range []string{"etcd-lease,lib-bsm-redislock", "redis,mysql,zookeeper,postgres,etcd"} {
			if n := strings.Count(string(out), list); n > 1 {
				t.Errorf("%v prints %s... %d times:\n%s", topic, list, n, out)
			}
		}
		if !strings.Contains(string(out), "-backends value\n    \tdeprecated: the same as") {
			t.Errorf("%v: --backends is not listed as deprecated:\n%s", topic, out)
		}
	}
}

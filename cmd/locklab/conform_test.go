package main

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// conformJUnit is what the tests read of conform's JUnit file.
type conformJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Skipped  int `xml:"skipped,attr"`
	Cases    []struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Failure   *junitMessage `xml:"failure"`
		Skipped   *junitMessage `xml:"skipped"`
	} `xml:"testcase"`
}

// `locklab conform` on a built-in approach, on the Redis servers it
// starts: every test a line (a skip with its reason), exit 0, one JUnit
// test case per suite test, and no server left.
func TestConformEndToEnd(t *testing.T) {
	tmp := t.TempDir()
	junit := filepath.Join(tmp, "conform.xml")
	cmd := locklab(tmp, "conform", "redis-setnx-px-lua", "--junit", junit)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("exit %d (%v), want 0\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"PASS  redis-setnx-px-lua/MutualExclusion",
		"PASS  redis-setnx-px-lua/ExtendKeepsTheLock",
		"SKIP  redis-setnx-px-lua/FencingTokensIncrease: no fencing declared",
		"redis-setnx-px-lua: 12 passed, 0 failed, 16 skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	lines := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "PASS  ") || strings.HasPrefix(l, "SKIP  ") || strings.HasPrefix(l, "FAIL  ") {
			lines++
		}
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite conformJUnit
	if err := xml.Unmarshal(b, &suite); err != nil {
		t.Fatalf("junit: %v\n%s", err, b)
	}
	if suite.Tests != lines || len(suite.Cases) != lines || suite.Failures != 0 || suite.Skipped != 16 {
		t.Errorf("JUnit: %d tests (%d cases), %d failures, %d skipped; want the %d printed, 0 failures, 16 skipped\n%s",
			suite.Tests, len(suite.Cases), suite.Failures, suite.Skipped, lines, b)
	}
	for _, c := range suite.Cases {
		if c.Classname != "locklab.conform.redis-setnx-px-lua" || strings.Contains(c.Name, "/") {
			t.Errorf("test case %s (class %s): want the suite test's name, classed by approach", c.Name, c.Classname)
		}
		if c.Skipped != nil && c.Skipped.Message == "" {
			t.Errorf("skipped test case %s does not say why", c.Name)
		}
	}
	waitNoServers(t, tmp)
	noTempDirsLeft(t, tmp)
}

// Ctrl-C in the middle of the suite: exit 130 at once, and the servers
// stop.
func TestConformSIGINTStopsEverything(t *testing.T) {
	tmp := t.TempDir()
	cmd := locklab(tmp, "conform", "redis-setnx-px-lua")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "/MutualExclusion") {
				once = true
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the suite never got to MutualExclusion")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want %d", err, exitInterrupted)
	}
	waitNoServers(t, tmp)
	noTempDirsLeft(t, tmp)
}

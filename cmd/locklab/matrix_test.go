package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/report"
)

// A small matrix end to end, as CI runs it: 3 approaches x 3 faults x 2
// runs, every file written, the verdict as expected, the JUnit valid.
func TestMatrixSmallEndToEnd(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	tmp := t.TempDir()
	results := filepath.Join(tmp, "r")
	junit := filepath.Join(tmp, "matrix.xml")
	cmd := locklab(tmp, "matrix", "--approaches", "redis-setnx-px-lua,redis-setnx,redis-get-set",
		"--faults", "none,client-pause,holder-crash", "--runs", "2", "--results", results, "--junit", junit,
		"--stall-threshold", catchStallThreshold)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(results, "*"))
	if len(dirs) != 1 {
		t.Fatalf("results: %v", dirs)
	}
	for _, f := range []string{"matrix.md", "matrix-compact.md", "matrix.json", "matrix.png", "matrix.html", "results.json"} {
		if _, err := os.Stat(filepath.Join(dirs[0], f)); err != nil {
			t.Error(err)
		}
	}
	var m report.Matrix
	b, _ := os.ReadFile(filepath.Join(dirs[0], "matrix.json"))
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Cells) != 9 {
		t.Fatalf("%d cells, want 9", len(m.Cells))
	}
	c, _ := m.Cell("redis-setnx-px-lua", "client-pause")
	// Caught in at least one run: a run on a starved machine may miss the
	// lost update (the second holder's write came after the first's);
	// how often each cell catches is the catch-rate pass's to measure.
	if c.Ran != 2 || c.Caught < 1 || c.Contradicted != 0 || !c.ExpectsViolation {
		t.Errorf("the GC pause cell: %+v", c)
	}
	c, _ = m.Cell("redis-get-set", "none")
	if c.Caught == 0 {
		t.Errorf("the racy approach's double grant was not caught: %+v", c)
	}
	if suite, _ := readJUnit(t, junit); suite.Tests != 9 || suite.Failures != 0 {
		t.Fatalf("junit: %+v", suite)
	}
}

// A deliberately wrong expectation makes the matrix exit 1 naming the cell.
func TestMatrixWrongExpectationFails(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "m")
	os.MkdirAll(filepath.Join(dir, "faults"), 0o755)
	exp, err := os.ReadFile("../../matrix/expectations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Claim the Lua lock grants twice under plain contention.
	wrong := strings.Replace(string(exp), "cells:\n  none:\n", "cells:\n  none:\n    - {match: redis-setnx-px-lua, expect: [double-grant], why: deliberately wrong, source: this test}\n", 1)
	os.WriteFile(filepath.Join(dir, "expectations.yaml"), []byte(wrong), 0o644)
	faults, _ := filepath.Glob("../../matrix/faults/*.yaml")
	for _, f := range faults {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, "faults", filepath.Base(f)), b, 0o644)
	}
	cmd := locklab(tmp, "matrix", "--matrix", dir, "--approaches", "redis-setnx-px-lua", "--faults", "none", "--runs", "1",
		"--results", filepath.Join(tmp, "r"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUnsafe {
		t.Fatalf("exit %v, want %d\n%s", err, exitUnsafe, out.String())
	}
	if !strings.Contains(out.String(), "redis-setnx-px-lua under none") {
		t.Fatalf("the cell is not named:\n%s", out.String())
	}
}

// roughly: seconds below a minute, ten seconds below ten minutes (the
// estimate is held to 15%), minutes past.
func TestRoughly(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{400 * time.Millisecond, 0},
		{14600 * time.Millisecond, 15 * time.Second},
		{59 * time.Second, 59 * time.Second},
		{94 * time.Second, 90 * time.Second},
		{9*time.Minute + 56*time.Second, 10 * time.Minute},
		{17*time.Minute + 20*time.Second, 17 * time.Minute},
	} {
		if got := roughly(c.in); got != c.want {
			t.Errorf("roughly(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// Package starve starves processes of the CPU for tests, as a machine
// under load or a container at its CPU quota does: it moves them into a
// CPU cgroup of their own allowed 1 ms per second, so their threads wait
// on the run queue while the rest of the machine runs on. It needs root.
package starve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CPU starves pids for d, then puts them back where they were.
func CPU(t testing.TB, pids []int, d time.Duration) {
	t.Helper()
	root, v2, err := cpuRoot()
	if err != nil {
		t.Fatalf("starve: %v", err)
	}
	dir := filepath.Join(root, fmt.Sprintf("locklab-starve-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatalf("starve: %v", err)
	}
	defer os.Remove(dir)
	var limit error
	if v2 {
		limit = os.WriteFile(filepath.Join(dir, "cpu.max"), []byte("1000 1000000"), 0o644)
	} else {
		limit = errors.Join(os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte("1000000"), 0o644),
			os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte("1000"), 0o644))
	}
	if limit != nil {
		t.Fatalf("starve: CPU quota: %v", limit)
	}
	back := map[int]string{}
	for _, pid := range pids {
		from, err := cpuCgroupOf(pid, v2)
		if err != nil {
			t.Fatalf("starve: %v", err)
		}
		back[pid] = filepath.Join(root, from)
	}
	// Put back even if the test fails: a process left at 1 ms a second
	// would starve the rest of the suite's servers' work.
	restore := func() {
		// The limit goes first: a process moved out of a cgroup that has
		// throttled it stays stopped until that cgroup's period ends (up
		// to a second more here), and its wait shows only once it runs.
		if v2 {
			_ = os.WriteFile(filepath.Join(dir, "cpu.max"), []byte("max 1000000"), 0o644)
		} else {
			_ = os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte("-1"), 0o644)
		}
		for pid, to := range back {
			_ = os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		}
	}
	defer restore()
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatalf("starve: move %d: %v", pid, err)
		}
	}
	time.Sleep(d)
}

// cpuRoot is where the CPU controller's hierarchy is mounted, and whether
// it is cgroup v2 (unified).
func cpuRoot() (string, bool, error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if !bytes.Contains(b, []byte("cpu")) {
			return "", false, errors.New("cgroup v2 without the cpu controller")
		}
		// The controller must be on for the children of the root.
		_ = os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0o644)
		return "/sys/fs/cgroup", true, nil
	}
	for _, d := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
		if _, err := os.Stat(filepath.Join(d, "cpu.cfs_quota_us")); err == nil {
			return d, false, nil
		}
	}
	return "", false, errors.New("no CPU cgroup controller mounted under /sys/fs/cgroup")
}

// cpuCgroupOf is pid's cgroup in the CPU hierarchy, relative to its root.
func cpuCgroupOf(pid int, v2 bool) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" {
			return parts[2], nil
		}
		for _, c := range strings.Split(parts[1], ",") {
			if !v2 && c == "cpu" {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("process %d: no CPU cgroup in /proc/%d/cgroup", pid, pid)
}

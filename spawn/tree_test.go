package spawn

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A shell's child and grandchild are its descendants; the shell is not.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'sleep 30 & echo $!; wait' & wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatal(err)
	}
	got := Descendants(cmd.Process.Pid)
	if len(got) != 2 || !slices.Contains(got, sleep) || slices.Contains(got, cmd.Process.Pid) {
		t.Errorf("Descendants(%d) = %v, want the inner shell and sleep %d", cmd.Process.Pid, got, sleep)
	}
	if d := Descendants(sleep); len(d) != 0 {
		t.Errorf("Descendants(sleep) = %v, want none", d)
	}
}

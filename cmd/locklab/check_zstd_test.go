package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// locklab check reads a zstd-compressed history as it reads the plain
// one, found by its magic bytes whatever the file is called: the same
// verdict, words and exit code.
func TestCheckZstd(t *testing.T) {
	dir := t.TempDir()
	for _, golden := range []string{"double-grant-outlived.jsonl", "ok-lost-replies.jsonl"} {
		plain := filepath.Join("..", "..", "checker", "testdata", golden)
		raw, err := os.ReadFile(plain)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := zstd.NewWriter(nil)
		packed := enc.EncodeAll(raw, nil)
		enc.Close()
		check := func(path string) (string, int) {
			cmd := exec.Command(binary, "check", path)
			b, _ := cmd.CombinedOutput()
			return strings.ReplaceAll(string(b), path, "HISTORY"), cmd.ProcessState.ExitCode()
		}
		want, wantCode := check(plain)
		if !strings.Contains(want, "verdict: ") {
			t.Fatalf("%s: no verdict:\n%s", golden, want)
		}
		for _, name := range []string{golden + ".zst", "named-plain-" + golden} {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, packed, 0o644); err != nil {
				t.Fatal(err)
			}
			if got, code := check(path); got != want || code != wantCode {
				t.Errorf("%s: exit %d, want %d:\n%s\nwant:\n%s", name, code, wantCode, got, want)
			}
		}
	}
}

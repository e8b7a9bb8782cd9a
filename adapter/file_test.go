package adapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	s, err := Load("testdata/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "ref-redis-setnx-px-lua" || s.Server != "redis" || s.Nodes != 1 || !s.Caps.TTL || !s.Caps.Renewal ||
		!s.Safe || s.StartTimeout != 10*time.Second || !filepath.IsAbs(s.Dir) || s.Argv[0] != "/bin/sh" {
		t.Errorf("loaded %+v", s)
	}
	for _, tc := range []struct{ file, err string }{
		{"name: x\ncommand: [./run.sh]\nserver: redis\n", ""},
		{"command: [a]\nserver: redis\n", "line 1: name is missing"},
		{"name: x\nserver: redis\n", "command is missing"},
		{"name: x\ncommand: [a]\n", "server is missing"},
		{"name: x\ncommand: [a]\nserver: mongo\n", `line 3: server "mongo": want one of redis`},
		{"name: x\ncommand: [a]\nserver: redis\nbogus: 1\n", `line 4: unknown key "bogus"`},
		{"name: x\ncommand: [a]\nserver: redis\ncapabilities: [ttl, magic]\n", `line 4: unknown capability "magic"`},
		{"name: x\ncommand: [a]\nserver: redis\nweaknesses: [slow]\n", `line 4: unknown weakness "slow"`},
		{"name: x\ncommand: [a]\nserver: redis\nstart-timeout: soon\n", `line 4: start-timeout "soon"`},
		{"name: X Y\ncommand: [a]\nserver: redis\n", `line 1: name "X Y"`},
		{"name: x\ncommand: [a]\nserver: redis\nnodes: -1\n", "line 4: nodes -1"},
		{"name: x\ncommand: [./run.sh]\nserver: redis\nlibrary: github.com/bsm/redislock v0.9.4\n", ""},
		{"name: x\ncommand: [a]\nserver: redis\nlibrary: redislock\n", `line 4: library "redislock": want NAME VERSION`},
		{"name: x\ncommand: [a\n", "did not find expected"},
		{"- a\n- b\n", "not a mapping"},
	} {
		path := filepath.Join(t.TempDir(), "a.yaml")
		if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(path)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.file, err)
		case tc.err == "" && s.Argv[0] != filepath.Join(filepath.Dir(path), "run.sh"):
			t.Errorf("%q: command %q, want it from the file's directory", tc.file, s.Argv[0])
		case tc.err != "" && err == nil:
			t.Errorf("%q: no error, want %q", tc.file, tc.err)
		case tc.err != "" && (!strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%q: %q, want one line with %q", tc.file, err, tc.err)
		}
	}
}

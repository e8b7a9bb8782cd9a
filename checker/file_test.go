package checker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/errtest"
)

func TestFileOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       FileOptions
		wantErr string
	}{
		{"the defaults", FileOptions{TimeLimit: 10 * time.Second}, ""},
		{"a given model", FileOptions{TimeLimit: time.Second, Model: "mutex", ModelGiven: true}, ""},
		{"a model not given is not read", FileOptions{TimeLimit: time.Second, Model: "knossos"}, ""},
		{"a zero time limit", FileOptions{}, "--time-limit 0s: must be positive"},
		{"a negative time limit", FileOptions{TimeLimit: -5 * time.Second}, "--time-limit -5s: must be positive"},
		{"an unknown model", FileOptions{TimeLimit: time.Second, Model: "knossos", ModelGiven: true}, `--model: unknown model "knossos" (want mutex or lease)`},
		{"an empty given model", FileOptions{TimeLimit: time.Second, ModelGiven: true}, `--model: unknown model ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errtest.Want(t, tc.o.Validate(), tc.wantErr)
		})
	}
}

func TestCheckFileRefusesAnEmptyHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := CheckFile(context.Background(), FileOptions{Path: path, Format: "jsonl", TimeLimit: time.Second})
	if err == nil || !strings.Contains(err.Error(), "no acquire or release operations in "+path) {
		t.Fatalf("CheckFile of an empty history: %v, want it refused", err)
	}
}

func TestCheckFileModel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		model     string
		given     bool
		wantModel Model
		wantSafe  bool
	}{
		{"Jepsen's JSON defaults to mutex", "", false, ModelMutex, false},
		{"a given lease model", "lease", true, ModelLease, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := CheckFile(context.Background(), FileOptions{Path: "testdata/etcd-release-in-flight.json", Model: tc.model, ModelGiven: tc.given,
				Linear: true, TimeLimit: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict.Model != tc.wantModel || r.Verdict.Safe() != tc.wantSafe {
				t.Fatalf("model %s, safe %v; want %s, %v", r.Verdict.Model, r.Verdict.Safe(), tc.wantModel, tc.wantSafe)
			}
		})
	}
}

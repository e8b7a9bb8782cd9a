package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// locklab check judges under the model asked for, mutex by default for
// Jepsen's EDN and JSON and lease for locklab's JSONL, and always says
// which. The etcd-pattern golden histories (checker/testdata; what they
// reproduce is said in checker's golden test) are invalid under mutex,
// with the proving events, and valid under lease with the revocations
// during a release reported; exit codes follow the verdict.
func TestCheckModels(t *testing.T) {
	golden := func(f string) string { return filepath.Join("..", "..", "checker", "testdata", f) }
	mutexWords := []string{"model: mutex (Knossos's: no expiry; a holder holds until a release of its own succeeds)\n",
		"  the lock: NOT linearizable",
		"  DOUBLE GRANT: HOLDER NEVER RELEASED: client 0 acquired the lock at 4.743842 s while client 3 held it since 2.080117 s and never released it: " +
			"its release invoked at 2.248061 s failed at 4.753595 s",
		"(events 20, 23, 26, 25)", "client 1 acquired the lock at 7.478514 s while client 3 held it", "(events 20, 23, 26, 31)",
		"verdict: VIOLATION: 2 double grant: holder never released (linearizable: no)"}
	leaseWords := []string{"model: lease (a tenure ends at its release's invocation; a release answered not held is a revocation)\n",
		"  REVOKED DURING RELEASE: client 3's hold on the lock was taken away while its release was in flight: client 0 was granted it at 4.743842 s",
		"(events 20, 23, 25, 26)", "(events 25, 29, 31, 32)",
		"verdict: OK (linearizable, no double grant, no resource anomaly; 2 revoked during release, no violation)"}
	tests := []struct {
		name, file string
		args       []string
		code       int
		want       []string
	}{
		{"jepsen edn: mutex by default", "etcd-release-in-flight.edn", nil, exitUnsafe, mutexWords},
		{"jepsen json: mutex by default", "etcd-release-in-flight.json", nil, exitUnsafe, mutexWords},
		{"jepsen edn, --model mutex", "etcd-release-in-flight.edn", []string{"--model", "mutex"}, exitUnsafe, mutexWords},
		{"jepsen edn, --model lease", "etcd-release-in-flight.edn", []string{"--model", "lease"}, exitOK, leaseWords},
		{"jepsen json, --model=lease after the file", "etcd-release-in-flight.json", []string{"--model=lease"}, exitOK, leaseWords},
		{"locklab jsonl: lease by default", "release-not-held.jsonl", nil, exitOK,
			[]string{"model: lease (", "REVOKED DURING RELEASE: client 0's release of k, asked at 0.000000 s, was answered", "with no grant to anyone meanwhile",
				"lock loss: 1 holder lost the lock untold", "verdict: OK (linearizable, no double grant, no resource anomaly; 1 revoked during release, no violation)"}},
		{"locklab jsonl, --model mutex: the failed release never happened", "release-not-held.jsonl", []string{"--model", "mutex"}, exitUnsafe,
			[]string{"model: mutex (", "DOUBLE GRANT: HOLDER NEVER RELEASED: client 1 acquired k", "verdict: VIOLATION: 1 double grant: holder never released"}},
		{"a crashed holder under lease", "crash-then-grant.jsonl", nil, exitOK, []string{"model: lease (", "verdict: OK"}},
		{"a crashed holder under mutex", "crash-then-grant.jsonl", []string{"--model", "mutex"}, exitUnsafe,
			[]string{"never released it: it crashed at 0.000000 s, and nothing expires", "verdict: VIOLATION"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"check", golden(tt.file)}, tt.args...)...)
			b, _ := cmd.CombinedOutput()
			out := string(b)
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// --json says the model, the revocations and the lock loss too.
	for model, code := range map[string]int{"mutex": exitUnsafe, "lease": exitOK} {
		cmd := exec.Command(binary, "check", "--json", "--model", model, golden("etcd-release-in-flight.json"))
		b, _ := cmd.Output()
		var v struct {
			Model     string `json:"model"`
			Anomalies []struct {
				Kind   string  `json:"kind"`
				Events []int64 `json:"events"`
			} `json:"anomalies"`
			LockLoss struct {
				NotTold int `json:"not_told"`
			} `json:"lock_loss"`
		}
		if err := json.Unmarshal(b, &v); err != nil || cmd.ProcessState.ExitCode() != code || v.Model != model || v.LockLoss.NotTold != 2 {
			t.Fatalf("--json --model %s: exit %d, %+v (%v)\n%s", model, cmd.ProcessState.ExitCode(), v, err, b)
		}
		if want := map[string]int{"mutex": 0, "lease": 2}[model]; len(v.Anomalies) != want || (want > 0 && v.Anomalies[0].Kind != "revoked during release") {
			t.Fatalf("--json --model %s: anomalies %+v, want %d revocations during a release", model, v.Anomalies, want)
		}
	}
}

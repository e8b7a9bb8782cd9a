package locklabtest_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The package a user imports links no container engine and no telemetry:
// Docker mode's client (cluster/docker: testcontainers-go, the Docker
// client, OpenTelemetry) is linked only by programs that start containers,
// and the proxies every network fault goes through are the lab's own
// (tcpproxy), which link no metrics library.
func TestImportsNoDockerOrTelemetry(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{with .Module}}{{.Path}}{{end}}`,
		"github.com/locklab/locklab/locklabtest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/testcontainers/", "github.com/moby/", "github.com/docker/", "github.com/containerd/",
		"github.com/opencontainers/", "go.opentelemetry.io/", "github.com/prometheus/"}
	modules := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			modules[line] = true
		}
	}
	if !modules["github.com/locklab/locklab"] || !modules["github.com/redis/go-redis/v9"] {
		t.Fatalf("go list names neither locklab nor go-redis among locklabtest's modules: %v", modules)
	}
	for _, mod := range slices.Sorted(maps.Keys(modules)) {
		for _, f := range forbidden {
			if strings.HasPrefix(mod+"/", f) {
				t.Errorf("locklabtest links %s (a container engine or telemetry module)", mod)
			}
		}
	}
	t.Logf("locklabtest links %d modules", len(modules))
}

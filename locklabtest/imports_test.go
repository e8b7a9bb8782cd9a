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
// client, OpenTelemetry) is linked only by programs that start containers.
// Prometheus comes with toxiproxy, whose proxies every network fault goes
// through, and from nowhere else. The test fails if either changes.
func TestImportsNoDockerOrTelemetry(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{with .Module}}{{.Path}}{{end}}|{{join .Imports ","}}`,
		"github.com/locklab/locklab/locklabtest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/testcontainers/", "github.com/moby/", "github.com/docker/", "github.com/containerd/",
		"github.com/opencontainers/", "go.opentelemetry.io/"}
	moduleOf := map[string]string{}
	importers := map[string][]string{}
	modules := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, rest, _ := strings.Cut(line, "|")
		mod, imports, _ := strings.Cut(rest, "|")
		moduleOf[pkg] = mod
		if mod != "" {
			modules[mod] = true
		}
		for _, imp := range strings.Split(imports, ",") {
			importers[imp] = append(importers[imp], pkg)
		}
	}
	if !modules["github.com/locklab/locklab"] || !modules["github.com/Shopify/toxiproxy/v2"] {
		t.Fatalf("go list names neither locklab nor toxiproxy among locklabtest's modules: %v", modules)
	}
	for _, mod := range slices.Sorted(maps.Keys(modules)) {
		for _, f := range forbidden {
			if strings.HasPrefix(mod+"/", f) {
				t.Errorf("locklabtest links %s (a container engine or telemetry module)", mod)
			}
		}
	}
	for pkg, mod := range moduleOf {
		if !strings.HasPrefix(mod, "github.com/prometheus/") {
			continue
		}
		for _, by := range importers[pkg] {
			if m := moduleOf[by]; m != "github.com/Shopify/toxiproxy/v2" && !strings.HasPrefix(m, "github.com/prometheus/") {
				t.Errorf("%s is imported by %s (module %s), not only by toxiproxy", pkg, by, m)
			}
		}
	}
	t.Logf("locklabtest links %d modules", len(modules))
}

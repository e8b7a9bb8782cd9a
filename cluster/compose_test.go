package cluster

import (
	"os"
	"testing"
)

// compose.yaml is what ComposeYAML generates: the same topology and start-up
// commands as --cluster docker. LOCKLAB_UPDATE_COMPOSE=1 rewrites it.
func TestComposeYAMLIsCurrent(t *testing.T) {
	const path = "../compose.yaml"
	want := ComposeYAML()
	if os.Getenv("LOCKLAB_UPDATE_COMPOSE") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is not what cluster.ComposeYAML generates: run LOCKLAB_UPDATE_COMPOSE=1 go test ./cluster -run TestComposeYAMLIsCurrent", path)
	}
}

package cluster

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
)

// Every kind declares what the rest of locklab reads of it: a kind added
// with a field left out fails here, not in a run.
func TestEveryKindIsWhole(t *testing.T) {
	seen := map[impls.Server]bool{}
	for _, k := range Kinds() {
		t.Run(string(k.Server), func(t *testing.T) {
			if seen[k.Server] {
				t.Fatalf("%s listed twice", k.Server)
			}
			seen[k.Server] = true
			if k.About == "" || k.Nodes < 1 || len(k.Binaries) == 0 {
				t.Errorf("about %q, %d nodes, binaries %v: each must be set", k.About, k.Nodes, k.Binaries)
			}
			for _, st := range k.Settings {
				if st.Name == "" || len(st.Values) == 0 {
					t.Errorf("setting %+v: a name and its values, the first the default", st)
				}
			}
			if k.StartCost <= 0 {
				t.Error("StartCost must be set (a matrix's estimate)")
			}
			if k.nodeName == nil || k.startLocal == nil || k.endpoint == nil {
				t.Error("nodeName, startLocal and endpoint must be set")
			}
			if (k.containers == nil) == (k.startDocker == nil) {
				t.Error("Docker mode: exactly one of containers and startDocker")
			}
			if k.containers != nil && k.health == nil {
				t.Error("containers need a health check")
			}
			if k.external != nil && k.speaks == nil {
				t.Error("a kind the user can list needs speaks")
			}
			img := k.image()
			if img.PublicImage == "" || img.LocalImage == "" {
				t.Errorf("images %q, %q (from %q): both must be set", img.PublicImage, img.LocalImage, k.ImageFrom)
			}
			if _, err := KindOf(k.Server); err != nil {
				t.Error(err)
			}
		})
	}
	if _, err := KindOf("nope"); err == nil || !strings.Contains(err.Error(), "known: redis") {
		t.Errorf("KindOf(nope) = %v, want the known kinds named", err)
	}
}

// A start costs its slowest kind's; containers, and a kind not known, a
// container's.
func TestStartCost(t *testing.T) {
	redis, mysql := kindNamed(impls.Redis).StartCost, kindNamed(impls.MySQL).StartCost
	for _, tc := range []struct {
		docker bool
		ss     []impls.Server
		want   time.Duration
	}{
		{false, []impls.Server{impls.Redis, impls.Redis}, redis},
		{false, []impls.Server{impls.Redis, impls.MySQL}, max(redis, mysql)},
		{true, []impls.Server{impls.Redis}, containerStart},
		{false, []impls.Server{impls.Redis, ""}, containerStart},
	} {
		if got := StartCost(tc.docker, tc.ss...); got != tc.want {
			t.Errorf("StartCost(%v, %v) = %v, want %v", tc.docker, tc.ss, got, tc.want)
		}
	}
}

// The install scripts are not derived from the kinds (deps.sh runs before
// Go is there): they must name every kind's packages and images.
func TestScriptsInstallEveryKind(t *testing.T) {
	deps, err := os.ReadFile("../scripts/deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)PACKAGES=\((.*?)\)`).FindSubmatch(deps)
	if m == nil {
		t.Fatal("scripts/deps.sh: no PACKAGES=(...)")
	}
	packages := strings.Fields(string(m[1]))
	images, err := os.ReadFile("../scripts/images.sh")
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`SERVERS=\(([^)]*)\)`).FindSubmatch(images)
	if m == nil {
		t.Fatal("scripts/images.sh: no SERVERS=(...)")
	}
	built := strings.Fields(string(m[1]))
	for _, k := range Kinds() {
		for _, b := range k.Binaries {
			if !slices.Contains(packages, b.Package) {
				t.Errorf("%s: scripts/deps.sh does not install %s (for %s)", k.Server, b.Package, b.Path)
			}
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(k.image().LocalImage, "locklab/"), ":")
		if !slices.Contains(built, name) {
			t.Errorf("%s: scripts/images.sh does not build %s", k.Server, k.image().LocalImage)
		}
	}
}

// LocalConfig names kinds by value: an unknown one is refused before
// anything starts.
func TestLocalConfigRefusesAnUnknownKind(t *testing.T) {
	_, err := StartLocal(t.Context(), LocalConfig{Nodes: map[impls.Server]int{"nope": 1}})
	if err == nil || !strings.Contains(err.Error(), `unknown server kind "nope"`) {
		t.Fatalf("err = %v, want the kind named", err)
	}
}

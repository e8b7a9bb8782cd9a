package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/impls/memlock"
)

// `list` prints every approach `list --json` does, grouped by server kind
// from the kind registry; one on a server locklab does not start is listed
// too, last (it hid the two Sentinel approaches when the kinds were
// written into list by hand).
func TestListShowsEveryApproach(t *testing.T) {
	withOther := all.Registry()
	other := memlock.NewService(1).Approach("in-memory")
	other.Server = ""
	withOther.Register(other)
	for name, reg := range map[string]*impls.Registry{"shipped": all.Registry(), "with one of no kind": withOther} {
		t.Run(name, func(t *testing.T) {
			var js, text bytes.Buffer
			listTo(reg, nil, true, &js)
			listTo(reg, nil, false, &text)
			var entries []struct{ Name string }
			if err := json.Unmarshal(js.Bytes(), &entries); err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(reg.Names()) {
				t.Fatalf("--json lists %d approaches, the registry has %d", len(entries), len(reg.Names()))
			}
			shown := map[string]int{}
			for _, l := range strings.Split(text.String(), "\n") {
				if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  ") && !strings.HasSuffix(f[0], ":") {
					shown[f[0]]++
				}
			}
			for _, e := range entries {
				if shown[e.Name] != 1 {
					t.Errorf("%s shown %d times in list, want once", e.Name, shown[e.Name])
				}
			}
			if len(shown) != len(entries) {
				t.Errorf("list shows %d approaches, --json %d", len(shown), len(entries))
			}
		})
	}
}

// `list` ends with every approach a regression folder pins, each with its
// library and version as its file says, and --json gives them too.
func TestListShowsPinnedVersions(t *testing.T) {
	pins, err := pinnedApproaches([]string{"../../regressions"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) == 0 {
		t.Fatal("no pinned approach in ../../regressions/*/scenario.yaml")
	}
	var js, text bytes.Buffer
	listTo(all.Registry(), pins, true, &js)
	listTo(all.Registry(), pins, false, &text)
	var entries []struct{ Name, Library, Scenario string }
	if err := json.Unmarshal(js.Bytes(), &entries); err != nil {
		t.Fatal(err)
	}
	libs := map[string]string{}
	for _, e := range entries {
		libs[e.Name] = e.Library + " " + e.Scenario
	}
	_, pinnedText, _ := strings.Cut(text.String(), "PINNED LIBRARY VERSIONS")
	for _, p := range pins {
		a := p.approach
		if a.Library == "" {
			t.Errorf("%s (%s): no library: in its approach file", a.Name, p.scenario)
		}
		if libs[a.Name] != a.Library+" "+p.scenario {
			t.Errorf("--json: %s: %q, want %q", a.Name, libs[a.Name], a.Library+" "+p.scenario)
		}
		if !strings.Contains(pinnedText, a.Name) || !strings.Contains(pinnedText, a.Library) {
			t.Errorf("list: %s with %s not among the pinned versions:\n%s", a.Name, a.Library, pinnedText)
		}
	}
}

package explore

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/scenario"
)

var updatePinned = flag.Bool("update-pinned", false, "rewrite testdata/pinned-schedules.txt")

// everyFault is a profile with every fault of chaos on a shape it acts
// on, so the generator draws each one's options and length.
func everyFault() Profile {
	p := Profile{Approach: "every-fault", Server: "redis", ServerNodes: 5, TTL: true, Renewal: true, Fencing: true}
	for _, k := range chaos.Kinds() {
		sel := chaos.Selector{Node: chaos.NodeOne}
		if strings.HasPrefix(k, "client-") {
			sel = chaos.Selector{Client: chaos.ClientHolder, Key: "0"}
		}
		p.Options = append(p.Options, Option{Kind: k, Target: sel})
	}
	return p
}

// The same seed gives the same schedules: the options each approach's
// probe finds, and fresh and mutated schedules of fixed seeds, are pinned
// in testdata/pinned-schedules.txt (go test -run TestPinnedSchedules
// -update-pinned rewrites it after a change meant to alter them).
func TestPinnedSchedules(t *testing.T) {
	profiles := []Profile{everyFault()}
	for _, name := range []string{"redis-setnx-px-lua", "etcd-lease", "redis-sentinel-lua", "mysql-for-update-replicated"} {
		profiles = append(profiles, profileOf(t, name))
	}
	var b strings.Builder
	for _, p := range profiles {
		fmt.Fprintf(&b, "%s (%s, %d nodes) options:\n", p.Approach, p.Server, p.ServerNodes)
		for _, o := range p.Options {
			fmt.Fprintf(&b, "  %s\n", o)
		}
		for _, seed := range []uint64{1, 42} {
			for i := range 8 {
				s := Generate(p, seed, i)
				fmt.Fprintf(&b, "%s seed %d #%d (%d): %s\n", p.Approach, seed, i, s.Seed, s.Summary())
				m := Mutate(p, s, seed, i)
				fmt.Fprintf(&b, "  mutant (%d): %s\n", m.Seed, m.Summary())
			}
		}
	}
	// Scenario files as explore writes them.
	for i := range 8 {
		s := Generate(profiles[0], 1, i)
		b.WriteString(pinnedFile(s))
	}
	// Lengths on another time scale: a session, no TTL.
	p := everyFault()
	p.TTL, p.Session = false, 4*time.Second
	for i := range 8 {
		s := Generate(p, 7, i)
		fmt.Fprintf(&b, "session seed 7 #%d (%d): %s\n", i, s.Seed, s.Summary())
	}
	const path = "testdata/pinned-schedules.txt"
	if *updatePinned {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(b.String(), "\n")
	for i, w := range strings.Split(string(want), "\n") {
		if i >= len(got) || got[i] != w {
			g := "(nothing)"
			if i < len(got) {
				g = got[i]
			}
			t.Fatalf("line %d differs:\nwant %s\ngot  %s", i+1, w, g)
		}
	}
	if n := len(strings.Split(string(want), "\n")); len(got) != n {
		t.Fatalf("%d lines, want %d", len(got), n)
	}
}

// pinnedFile is s's scenario file with a comment and an expectation.
func pinnedFile(s Schedule) string {
	d := s.Draft("pinned")
	d.Comment, d.Expect = []string{"a comment", "", "its second part"}, []string{"safe"}
	return string(scenario.Format(d))
}

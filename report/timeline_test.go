package report

import (
	"image/png"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

// busyTimeline: 32 clients contending for 8 keys for 60 s, with one fault
// window and two injected double grants.
func busyTimeline() *Timeline {
	rng := rand.New(rand.NewSource(1))
	m := checker.NewMutex()
	const clients, keys = 32, 8
	var idx int64
	add := func(p int, typ history.Type, f, k string, t int64) {
		m.Add(history.Event{Index: idx, Proc: p, Type: typ, F: f, Key: k, T: t})
		idx++
	}
	for k := 0; k < keys; k++ {
		key := string(rune('a' + k))
		t := int64(0)
		for t < 60e9 {
			p := rng.Intn(clients)
			t += rng.Int63n(2e6)
			add(p, history.OK, history.Acquire, key, t)
			t += 1e5 + rng.Int63n(3e6)
			add(p, history.Invoke, history.Release, key, t)
		}
	}
	// Two overlaps on key "a".
	add(5, history.OK, history.Acquire, "a", 20e9)
	add(6, history.OK, history.Acquire, "a", 20.2e9)
	add(5, history.Invoke, history.Release, "a", 20.5e9)
	add(6, history.Invoke, history.Release, "a", 20.6e9)
	return &Timeline{Title: "32 clients, 60 s", Origin: 0, End: 60e9, Intervals: m.Intervals(),
		Grants: m.DoubleGrants(), Faults: []Window{{Start: 30e9, End: 40e9, Label: "partition"}}}
}

func TestPlotTimeline32Clients60s(t *testing.T) {
	tl := busyTimeline()
	if len(tl.Grants) < 2 {
		t.Fatalf("want the injected double grants, got %d", len(tl.Grants))
	}
	path := filepath.Join(t.TempDir(), "timeline.png")
	start := time.Now()
	if err := PlotTimeline(path, tl); err != nil {
		t.Fatal(err)
	}
	t.Logf("plotted %d keys in %v", len(tl.Intervals), time.Since(start))
	if out := os.Getenv("LOCKLAB_TIMELINE_OUT"); out != "" {
		b, _ := os.ReadFile(path)
		os.WriteFile(out, b, 0o644)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dy() < 32*15 {
		t.Fatalf("image %v too short for 32 readable lanes", img.Bounds())
	}
	if err := PlotTimeline(filepath.Join(t.TempDir(), "e.png"), &Timeline{}); err == nil {
		t.Fatal("an empty timeline must be an error")
	}
}

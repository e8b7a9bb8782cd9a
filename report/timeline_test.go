package report

import (
	goimage "image"
	"image/png"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

// busyTimeline: 32 clients contending for 8 keys for 60 s, with one fault
// window and two injected double grants.
func busyTimeline() *Timeline {
	rng := rand.New(rand.NewSource(1))
	m := checker.NewMutex(checker.ModelLease)
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
	img := readPNG(t, path)
	if img.Bounds().Dy() < 32*15 {
		t.Fatalf("image %v too short for 32 readable lanes", img.Bounds())
	}
	if err := PlotTimeline(filepath.Join(t.TempDir(), "e.png"), &Timeline{}); err == nil {
		t.Fatal("an empty timeline must be an error")
	}
}

// TestTimelineLanes: a lane per client up to maxLanes clients, then a lane
// per key, for check and the runner alike.
func TestTimelineLanes(t *testing.T) {
	timeline := func(clients, keys int) *Timeline {
		tl := &Timeline{Intervals: map[string][]checker.Interval{}}
		for p := 0; p < clients; p++ {
			k := string(rune('a' + p%keys))
			tl.Intervals[k] = append(tl.Intervals[k], checker.Interval{Proc: p, Key: k})
		}
		return tl
	}
	for _, tt := range []struct {
		clients, keys int
		first         string
		lanes, cut    int
	}{
		{3, 2, "process 0", 3, 0},
		{maxLanes, 2, "process 0", maxLanes, 0},
		{maxLanes + 1, 2, "key a", 2, 0},
		{maxLanes + 1, maxLanes + 6, "key a", maxLanes, 1},
	} {
		names, laneOf, cut := timeline(tt.clients, tt.keys).lanes()
		if len(names) != tt.lanes || cut != tt.cut || names[0] != tt.first {
			t.Errorf("%d clients on %d keys: %d lanes from %q, %d cut; want %d from %q, %d cut",
				tt.clients, tt.keys, len(names), names[0], cut, tt.lanes, tt.first, tt.cut)
		}
		if got := laneOf(checker.Interval{Proc: 1, Key: "b"}); got != 1 {
			t.Errorf("%d clients on %d keys: client 1 on b in lane %d, want 1", tt.clients, tt.keys, got)
		}
	}
}

func TestWindows(t *testing.T) {
	got := Windows([]history.Window{{Fault: "client-pause", Start: 10, End: 20}, {Fault: "server-kill", Start: 15}}, 99)
	want := []Window{{Start: 10, End: 20, Label: "client-pause"}, {Start: 15, End: 99, Label: "server-kill", Open: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("windows %+v, want %+v (an unhealed fault runs to the end)", got, want)
	}
}

// The lab's stalls are drawn apart from fault windows: a purple hatching
// over the stall's stretch, none over the fault's yellow.
func TestTimelineShadesStallsApartFromFaults(t *testing.T) {
	tl := busyTimeline()
	tl.Faults = []Window{{Start: 10e9, End: 20e9, Label: "client-pause"}}
	tl.Stalls = []Window{{Start: 40e9, End: 45e9, Label: "locklab"}}
	path := filepath.Join(t.TempDir(), "timeline.png")
	if err := PlotTimeline(path, tl); err != nil {
		t.Fatal(err)
	}
	img := readPNG(t, path)
	b := img.Bounds()
	// The hatching's own colour, give or take anti-aliasing: not the
	// purple where a red double grant meets a blue holder.
	near := func(v, want uint32) bool { return v>>8+24 > want && v>>8 < want+24 }
	purple := func(r, g, bl uint32) bool { return near(r, 0x80) && near(g, 0x00) && near(bl, 0xc0) }
	yellow := func(r, g, bl uint32) bool { return r > 0xe0<<8 && g > 0xc0<<8 && bl < 0xc0<<8 }
	purpleMin, purpleMax, yellowMax := b.Max.X, -1, -1
	// Below the legend (top), which has a sample of each.
	for y := b.Min.Y + b.Dy()/3; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			switch {
			case purple(r, g, bl):
				purpleMin, purpleMax = min(purpleMin, x), max(purpleMax, x)
			case yellow(r, g, bl):
				yellowMax = max(yellowMax, x)
			}
		}
	}
	if purpleMax < 0 || yellowMax < 0 {
		t.Fatalf("no stall hatching (purple to x=%d) or no fault shading (yellow to x=%d)", purpleMax, yellowMax)
	}
	if purpleMin <= yellowMax {
		t.Errorf("stall hatching from x=%d overlaps the fault window (to x=%d): they must be told apart", purpleMin, yellowMax)
	}
	if w := purpleMax - purpleMin; w > b.Dx()/6 {
		t.Errorf("stall hatching %d px wide on a %d px plot: wider than 5 s of 60", w, b.Dx())
	}
}

func readPNG(t *testing.T, path string) goimage.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// A fault on one client shades that client's lane only; a server's, every
// lane.
func TestTimelineShadesAClientFaultOnItsLane(t *testing.T) {
	tl := &Timeline{Title: "eight clients", End: 60e9, Intervals: map[string][]checker.Interval{}}
	for p := 0; p < 8; p++ {
		tl.Intervals["k"] = append(tl.Intervals["k"], checker.Interval{Key: "k", Proc: p, Start: int64(p) * 1e9, End: int64(p)*1e9 + 5e8})
	}
	tl.Faults = []Window{{Start: 10e9, End: 20e9, Label: "client-pause", Target: "client 3 (process 3)"},
		{Start: 30e9, End: 40e9, Label: "server-kill", Target: "redis-1"}}
	path := filepath.Join(t.TempDir(), "timeline.png")
	if err := PlotTimeline(path, tl); err != nil {
		t.Fatal(err)
	}
	img := readPNG(t, path)
	b := img.Bounds()
	// Each shade over white: the client's orange, the server's yellow.
	orange := func(r, g, bl uint32) bool {
		return r>>8 > 0xf0 && g>>8 > 0xc0 && g>>8 < 0xd8 && bl>>8 > 0x80 && bl>>8 < 0xb0
	}
	yellow := func(r, g, bl uint32) bool {
		return r>>8 > 0xf0 && g>>8 > 0xd8 && g>>8 < 0xf0 && bl>>8 > 0x98 && bl>>8 < 0xc0
	}
	oMin, oMax, yMin, yMax := b.Max.Y, -1, b.Max.Y, -1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X + b.Dx()/8; x < b.Max.X; x++ { // right of the lane names
			r, g, bl, _ := img.At(x, y).RGBA()
			switch {
			case orange(r, g, bl):
				oMin, oMax = min(oMin, y), max(oMax, y)
			case yellow(r, g, bl):
				yMin, yMax = min(yMin, y), max(yMax, y)
			}
		}
	}
	if oMax < 0 || yMax < 0 {
		t.Fatalf("no client fault shading (rows %d..%d) or no server fault shading (rows %d..%d)", oMin, oMax, yMin, yMax)
	}
	if h := oMax - oMin; h > b.Dy()/8 {
		t.Errorf("the client's pause shades %d px of a %d px plot of 8 lanes: more than its lane", h, b.Dy())
	}
	if h := yMax - yMin; h < b.Dy()/2 {
		t.Errorf("the server's fault shades %d px of a %d px plot: not every lane", h, b.Dy())
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/verdict"
)

func hist(values ...int64) *hdrhistogram.Histogram {
	h := hdrhistogram.New(1_000, 300_000_000_000, 3)
	for _, v := range values {
		h.RecordValue(v)
	}
	return h
}

func TestSummarise(t *testing.T) {
	var vs []int64
	for i := int64(1); i <= 1000; i++ {
		vs = append(vs, i*1000) // 1 µs .. 1000 µs
	}
	s := Summarise(hist(vs...))
	near := func(got, want float64) bool { return got > want*0.99 && got < want*1.01 }
	if s.Count != 1000 || !near(s.P50, 500) || !near(s.P99, 990) || !near(s.Max, 1000) {
		t.Fatalf("summary %+v", s)
	}
	if (Summarise(hist()) != Latency{}) {
		t.Fatal("empty histogram must summarise to zero")
	}
}

func TestPercentilePointsMonotone(t *testing.T) {
	h := hist(1000, 2000, 3000, 50_000, 900_000)
	pts := PercentilePoints(h)
	if len(pts) < 2 {
		t.Fatalf("%d points", len(pts))
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].X <= pts[i-1].X || pts[i].Y < pts[i-1].Y {
			t.Fatalf("not monotone at %d: %v then %v", i, pts[i-1], pts[i])
		}
	}
	if last := pts[len(pts)-1]; last.X != 5 || last.Y < 899 {
		t.Fatalf("last point %v, want x=count, y=max", last)
	}
}

func TestPercentileTicks(t *testing.T) {
	ticks := percentileTicks{}.Ticks(1, 1500)
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, " "); got != "0% 50% 90% 99% 99.9%" {
		t.Fatalf("labels %q", got)
	}
}

func TestFormatMicros(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{{0, "-"}, {55, "55µs"}, {1500, "1.5ms"}, {2_340_000, "2.34s"}} {
		if got := FormatMicros(tt.in); got != tt.want {
			t.Errorf("FormatMicros(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestArtifactsAreWritten(t *testing.T) {
	dir := t.TempDir()
	h := hist(50_000, 60_000, 70_000, 2_000_000)
	if err := WriteHgrm(filepath.Join(dir, "a.hgrm"), h); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "a.hgrm"))
	if !bytes.Contains(b, []byte("Value")) || !bytes.Contains(b, []byte("#[Max")) {
		t.Fatalf("hgrm:\n%s", b)
	}
	png1 := filepath.Join(dir, "p.png")
	if err := PlotPercentiles(png1, "t", []Series{{"a", h}, {"b", hist(1000, 5000)}}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(png1)
	img, err := png.Decode(f)
	f.Close()
	if err != nil || img.Bounds().Dx() < 500 {
		t.Fatalf("png: %v", err)
	}
	runs := []Run{{Approach: "x", Clients: 1, AcquiresPerSec: 10}, {Approach: "x", Clients: 8, AcquiresPerSec: 50}}
	if err := PlotThroughput(filepath.Join(dir, "t.png"), runs); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(filepath.Join(dir, "r.json"), Results{RunID: "r1", Runs: runs}); err != nil {
		t.Fatal(err)
	}
	var back Results
	b, _ = os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(b, &back); err != nil || back.RunID != "r1" || len(back.Runs) != 2 {
		t.Fatalf("results.json round trip: %v %+v", err, back)
	}
	var buf bytes.Buffer
	if err := PrintTable(&buf, runs); err != nil || !strings.Contains(buf.String(), "double grants") {
		t.Fatalf("table: %v\n%s", err, buf.String())
	}
	if err := PlotPercentiles(filepath.Join(dir, "e.png"), "t", []Series{{"a", hist()}}); err == nil {
		t.Fatal("plot with no data must fail")
	}
}

// Degenerate axis ranges end, with ticks inside the range.
func TestLatencyTicksDegenerateRanges(t *testing.T) {
	for _, r := range [][2]float64{{0, 2}, {0, 0}, {1, 1}, {-5, 3}, {1, math.Inf(1)}, {math.NaN(), 2}, {0.001, 5e6}} {
		ticks := latencyTicks{}.Ticks(r[0], r[1])
		if len(ticks) > 100 {
			t.Fatalf("Ticks(%v, %v): %d ticks", r[0], r[1], len(ticks))
		}
		for _, tk := range ticks {
			if tk.Value <= 0 || math.IsInf(tk.Value, 0) || math.IsNaN(tk.Value) {
				t.Fatalf("Ticks(%v, %v): tick %v", r[0], r[1], tk.Value)
			}
		}
	}
}

// Percentile plots of degenerate histograms (one sample, every sample at
// the floor, hand-offs of 1 ns) are drawn, not panics or endless loops.
func TestPlotPercentilesDegenerateHistograms(t *testing.T) {
	dir := t.TempDir()
	one := hdrhistogram.New(1, int64(time.Hour), 3)
	_ = one.RecordValue(1)
	floor := hdrhistogram.New(1000, int64(time.Hour), 3)
	for i := 0; i < 1000; i++ {
		_ = floor.RecordValue(1000)
	}
	ones := hdrhistogram.New(1, int64(time.Hour), 3)
	for i := 0; i < 3; i++ {
		_ = ones.RecordValue(1)
	}
	for name, h := range map[string]*hdrhistogram.Histogram{"one": one, "floor": floor, "ones": ones} {
		path := filepath.Join(dir, name+".png")
		if err := PlotPercentiles(path, name, []Series{{Label: name, Hist: h}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The compact table: expected outcome in short and the runs that bore it
// out; n/a; a mismatch in bold with what was seen; a legend of what the
// abbreviations used mean, and only those.
func TestMatrixCompact(t *testing.T) {
	m := &Matrix{Runs: 3, Command: "locklab matrix --runs 3", Approaches: []string{"a", "b"}, Faults: []string{"f", "g"},
		Cells: []MatrixCell{
			{Approach: "a", Fault: "f", Applies: true, Expected: []string{"safe"}, Ran: 3, Agreed: 3, Status: "as expected"},
			{Approach: "a", Fault: "g", Applies: true, Expected: []string{"double-grant:both-valid"}, ExpectsViolation: true,
				Observed: []string{"double-grant:both-valid", "revoked"}, Ran: 3, Agreed: 2, Caught: 2, Status: "as expected"},
			{Approach: "b", Fault: "f"},
			{Approach: "b", Fault: "g", Applies: true, Expected: []string{"not:double-grant", "may:revoked"}, Observed: []string{"double-grant:outlived"},
				Ran: 3, Agreed: 2, Contradicted: 1, Status: "contradicted"},
		}}
	got := string(MatrixCompact(m))
	for _, want := range []string{
		"| a | safe 3/3 | DGv 2/3 |",
		"| b | n/a | **not DG+rev? 2/3, saw DGo** |",
		"X? = X may show (predicted, not required)",
		"DGv = double grant, both leases valid", "DGo = double grant, the holder outlived its lease", "rev = revoked",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("compact matrix lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "LU =") {
		t.Errorf("legend explains an abbreviation no cell uses:\n%s", got)
	}
}

// A cell left out by --cells reads as left out, not n/a, in every table;
// the catch-rate section lists each cell that expects a violation against
// the 95% / 30 s target.
func TestMatrixNotChosenAndCatchRates(t *testing.T) {
	m := &Matrix{Runs: 20, Command: "locklab matrix --cells unsafe --runs 20", Approaches: []string{"a", "b", "c"}, Faults: []string{"f", "g"},
		Cells: []MatrixCell{
			{Approach: "a", Fault: "f", NotChosen: true, Expected: []string{"safe"}},
			{Approach: "a", Fault: "g", Applies: true, Expected: []string{"double-grant:both-valid"}, ExpectsViolation: true,
				Observed: []string{"double-grant:both-valid"}, Ran: 20, Agreed: 20, Caught: 20,
				TimesToViolation: repeat(2.5, 20), Status: "as expected"},
			{Approach: "b", Fault: "f"},
			{Approach: "b", Fault: "g", Applies: true, Expected: []string{"double-grant:outlived"}, ExpectsViolation: true,
				Observed: []string{"double-grant:outlived"}, Ran: 20, Agreed: 18, Caught: 18,
				TimesToViolation: repeat(1, 18), Status: "as expected"},
			{Approach: "c", Fault: "g", Applies: true, Expected: []string{"double-grant:outlived"}, ExpectsViolation: true,
				Observed: []string{"double-grant:outlived"}, Ran: 20, Agreed: 18, Caught: 18, Undecided: 2,
				TimesToViolation: repeat(1, 18), Status: "as expected"},
		}}
	compact, full := string(MatrixCompact(m)), string(MatrixMarkdown(m))
	for _, want := range []string{"| a | – | DGv 20/20 |", "| b | n/a | DGo 18/20 |", "– = applies, not run this time (--cells)"} {
		if !strings.Contains(compact, want) {
			t.Errorf("compact matrix lacks %q:\n%s", want, compact)
		}
	}
	for _, want := range []string{
		"- **a**: safe; not run this time (--cells).",
		"2 of 3 cells that expect a violation caught it in at least 95% of their decided runs",
		"| c | g | double-grant:outlived | 18/18 (2 undecided) | 100% | 1.0 s | 1.0 s | yes |",
		"| a | g | double-grant:both-valid | 20/20 | 100% | 2.5 s | 2.5 s | yes |",
		"| b | g | double-grant:outlived | 18/20 | 90% | 1.0 s | 1.0 s | **no** |",
	} {
		if !strings.Contains(full, want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, full)
		}
	}
	if html := string(MatrixHTML(m)); !strings.Contains(html, "<td class=na>–</td>") {
		t.Errorf("matrix.html does not mark the left-out cell:\n%s", html)
	}
}

// The matrix says which model judged its runs, and each cell how soon
// holders were told of a lost lock.
func TestMatrixModelAndLockLoss(t *testing.T) {
	m := &Matrix{Runs: 2, Command: "locklab matrix", Model: checker.ModelLease, Approaches: []string{"a"}, Faults: []string{"f"},
		Cells: []MatrixCell{{Approach: "a", Fault: "f", Applies: true, Expected: []string{"double-grant:outlived"}, ExpectsViolation: true,
			Observed: []string{"double-grant:outlived"}, Ran: 2, Agreed: 2, Caught: 2, Status: verdict.Agrees,
			LockLoss: MergeLockLoss(&LockLoss{Told: 1, Samples: []float64{0.8}}, &LockLoss{Told: 1, NotTold: 1, Samples: []float64{1.2}})}}}
	full := string(MatrixMarkdown(m))
	for _, want := range []string{"2 run(s) per cell, histories judged under the model lease (a tenure ends at its release's invocation",
		"caught 2/2; lock loss: 2 holders told 1.200 s after the server freed the lock (median; from 0.800 s after to 1.200 s after); 1 more lost it untold |"} {
		if !strings.Contains(full, want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, full)
		}
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// WriteMatrix writes every matrix artifact, and the JUnit file when asked.
func TestWriteMatrix(t *testing.T) {
	m := &Matrix{Runs: 1, Approaches: []string{"a"}, Faults: []string{"f"},
		Cells: []MatrixCell{{Approach: "a", Fault: "f", Applies: true, Expected: []string{"safe"}, Ran: 1, Agreed: 1, Status: verdict.Agrees}}}
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	if err := WriteMatrix(dir, m, junit, func(err error) { t.Errorf("warning: %v", err) }); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"matrix.md", "matrix-compact.md", "matrix.json", "matrix.png", "matrix.html", "junit.xml"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	if err := WriteMatrix(filepath.Join(dir, "missing"), m, "", func(error) {}); err == nil {
		t.Error("a folder that does not exist must be an error")
	}
}

func TestRunCores(t *testing.T) {
	two := 2.0
	for _, tc := range []struct {
		name string
		run  Run
		want string
	}{
		{"both", Run{Seconds: 4, CPU: &CPUUse{Locklab: 3, Servers: &two}}, "0.75/0.50"},
		{"servers not measured", Run{Seconds: 2, CPU: &CPUUse{Locklab: 1}}, "0.50/-"},
		{"nothing measured", Run{Seconds: 2}, "-"},
		{"no duration", Run{CPU: &CPUUse{Locklab: 1}}, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run.Cores(); got != tc.want {
				t.Fatalf("Cores() = %q, want %q", got, tc.want)
			}
		})
	}
}

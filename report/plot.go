package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a latency plot.
type Series struct {
	Label string
	Hist  *hdrhistogram.Histogram // nanoseconds
}

// percentileTicks labels the 1/(1-p) axis with the percentiles people read:
// 0%, 50%, 90%, 99%, 99.9%, ...
type percentileTicks struct{}

func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	ticks := []plot.Tick{{Value: 1, Label: "0%"}, {Value: 2, Label: "50%"}}
	label := []string{"90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%", "99.99999%"}
	for i, x := 0, 10.0; x <= max*1.0001 && i < len(label); i, x = i+1, x*10 {
		ticks = append(ticks, plot.Tick{Value: x, Label: label[i]})
	}
	return ticks
}

// latencyTicks labels a log-scaled microsecond axis in µs, ms and s.
type latencyTicks struct{}

func (latencyTicks) Ticks(min, max float64) []plot.Tick {
	// gonum was seen to ask for ticks from 0 (a run whose latencies were
	// all at the 1 µs floor): a decade loop from 0 never ends, and grew
	// memory until the machine thrashed. Latencies are at least 1 µs.
	if math.IsNaN(min) || math.IsNaN(max) || math.IsInf(max, 0) {
		return nil
	}
	min = math.Max(min, 1)
	max = math.Max(max, min)
	var ticks []plot.Tick
	for decade := math.Pow(10, math.Floor(math.Log10(min))); decade <= max*10; decade *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := decade * m
			if v < min/1.0001 || v > max*1.0001 {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: FormatMicros(v)})
		}
	}
	if len(ticks) < 2 { // a narrow range: label its ends
		ticks = []plot.Tick{{Value: min, Label: FormatMicros(min)}, {Value: max, Label: FormatMicros(max)}}
	}
	return ticks
}

// PercentilePoints samples a histogram along x = 1/(1-p), from the median
// down to the minimum and up to the point where the count runs out.
func PercentilePoints(h *hdrhistogram.Histogram) plotter.XYs {
	n := float64(h.TotalCount())
	if n == 0 {
		return nil
	}
	var pts plotter.XYs
	for x := 1.0; x < n; x *= 1.05 {
		v := float64(h.ValueAtQuantile(100*(1-1/x))) / 1e3
		pts = append(pts, plotter.XY{X: x, Y: math.Max(v, 1)})
	}
	// The line ends at the maximum, drawn where the samples run out.
	return append(pts, plotter.XY{X: math.Max(n, 1.0001), Y: math.Max(float64(h.Max())/1e3, 1)})
}

// PlotPercentiles draws the latency percentile distribution: one line per
// series, x log-scaled as 1/(1-p), y log-scaled latency.
func PlotPercentiles(path, title string, series []Series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = percentileTicks{}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	drawn := 0
	for i, s := range series {
		pts := PercentilePoints(s.Hist)
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Label, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		p.Add(line)
		p.Legend.Add(s.Label, line)
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("plot %s: no data", path)
	}
	// Both axes are logarithmic and every point is at least 1 on each:
	// say so, rather than leave gonum a range it may pad down to 0.
	// The top gets half as much again, so that the slowest request's rise
	// at the last percentile shows its end below the frame.
	p.X.Min, p.Y.Min = 1, math.Max(1, p.Y.Min)
	p.X.Max = math.Max(p.X.Max, 10)
	p.Y.Max = math.Max(p.Y.Max*1.5, 2)
	return savePlot(p, 9*vg.Inch, 5.5*vg.Inch, path)
}

// PlotThroughput draws acquires/s against client count, one line per approach.
func PlotThroughput(path string, runs []Run) error {
	names, pts := byClients(runs, func(r Run) (float64, bool) { return r.AcquiresPerSec, true })
	p := clientsPlot("Throughput: lock cycles per second", "acquires/s", runs)
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{}
	maxY := 0.0
	for _, r := range runs {
		maxY = math.Max(maxY, r.AcquiresPerSec)
	}
	p.Y.Max = maxY * 1.35 // room for the legend above the lines
	for i, name := range names {
		if err := addClientsLine(p, i, name, pts[name], false); err != nil {
			return err
		}
	}
	return savePlot(p, 7*vg.Inch, 4.5*vg.Inch, path)
}

// byClients collects one value per run against its client count, by
// approach in the order they first appear; a run for which value says
// false is left out.
func byClients(runs []Run, value func(Run) (float64, bool)) ([]string, map[string]plotter.XYs) {
	var names []string
	pts := map[string]plotter.XYs{}
	for _, r := range runs {
		v, ok := value(r)
		if !ok {
			continue
		}
		if _, seen := pts[r.Approach]; !seen {
			names = append(names, r.Approach)
		}
		pts[r.Approach] = append(pts[r.Approach], plotter.XY{X: float64(r.Clients), Y: v})
	}
	return names, pts
}

// clientsPlot is a plot with client count on a log x axis, legend top left.
func clientsPlot(title, yLabel string, runs []Run) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "clients"
	p.Y.Label.Text = yLabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = clientTicks(runs)
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// addClientsLine draws pts (sorted by client count) in the i-th colour,
// dashed or solid; a solid line gets the legend entry.
func addClientsLine(p *plot.Plot, i int, name string, pts plotter.XYs, dashed bool) error {
	sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
	lp, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	lp.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
	sc.Shape = draw.CircleGlyph{}
	if dashed {
		lp.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	} else {
		p.Legend.Add(name, lp, sc)
	}
	p.Add(lp, sc)
	return nil
}

type clientTicks []Run

func (c clientTicks) Ticks(min, max float64) []plot.Tick {
	seen := map[int]bool{}
	var ticks []plot.Tick
	for _, r := range c {
		if !seen[r.Clients] {
			seen[r.Clients] = true
			ticks = append(ticks, plot.Tick{Value: float64(r.Clients), Label: fmt.Sprint(r.Clients)})
		}
	}
	return ticks
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// PlotLatencyVsClients draws acquire latency p50 (solid) and p99 (dashed)
// against client count, one colour per approach: how waiting grows with
// contention.
func PlotLatencyVsClients(path string, runs []Run) error {
	granted := func(r Run) bool { return r.Acquire.Count > 0 }
	names, p50 := byClients(runs, func(r Run) (float64, bool) { return r.Acquire.P50, granted(r) })
	_, p99 := byClients(runs, func(r Run) (float64, bool) { return r.Acquire.P99, granted(r) })
	if len(names) == 0 {
		return fmt.Errorf("plot %s: no data", path)
	}
	p := clientsPlot("Acquire latency against clients: p50 solid, p99 dashed", "latency", runs)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{}
	maxY := 0.0
	for _, r := range runs {
		maxY = math.Max(maxY, r.Acquire.P99)
	}
	p.Y.Max = maxY * 4 // room for the legend above the lines (log scale)
	for i, name := range names {
		if err := addClientsLine(p, i, name, p50[name], false); err != nil {
			return err
		}
		if err := addClientsLine(p, i, name, p99[name], true); err != nil {
			return err
		}
	}
	return savePlot(p, 7*vg.Inch, 4.5*vg.Inch, path)
}

package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LatencyPoint is one acquire: when it ended and how long it took.
type LatencyPoint struct {
	T       int64  // CLOCK_MONOTONIC ns at completion
	Latency int64  // ns
	Outcome string // ok, fail (not acquired), info (indeterminate)
}

// LatencyOverTime is what the latency-over-time plot shows.
type LatencyOverTime struct {
	Title  string
	Origin int64
	End    int64
	Points []LatencyPoint
	Faults []Window
}

var outcomeColor = map[string]color.Color{
	"ok":   color.RGBA{R: 0x33, G: 0x66, B: 0xcc, A: 0xff},
	"fail": color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff},
	"info": color.RGBA{R: 0xe0, G: 0x10, B: 0x10, A: 0xff},
}

// PlotLatencyOverTime draws every acquire's latency (log scale) against
// the time it completed, coloured by outcome, with fault windows shaded:
// what a fault does to the clients shows as it happens.
func PlotLatencyOverTime(path string, l *LatencyOverTime) error {
	if len(l.Points) == 0 {
		// A log axis needs a positive range: nothing to draw yet.
		return fmt.Errorf("latency plot %s: no acquire completed", path)
	}
	p := plot.New()
	p.Title.Text = l.Title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "acquire latency (ms, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = 0, math.Max(float64(l.End-l.Origin)/1e9, 0.001)
	p.Add(&faultShading{windows: l.Faults, origin: l.Origin})
	for _, outcome := range []string{"ok", "fail", "info"} {
		var xys plotter.XYs
		for _, pt := range l.Points {
			if pt.Outcome == outcome {
				xys = append(xys, plotter.XY{X: float64(pt.T-l.Origin) / 1e9, Y: math.Max(float64(pt.Latency)/1e6, 0.001)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("latency plot: %w", err)
		}
		s.GlyphStyle = draw.GlyphStyle{Color: outcomeColor[outcome], Radius: vg.Points(1), Shape: draw.CircleGlyph{}}
		p.Add(s)
		label := map[string]string{"ok": "acquired", "fail": "not acquired", "info": "indeterminate"}[outcome]
		p.Legend.Add(label, s)
	}
	p.Legend.Top = true
	if err := savePlot(p, 22*vg.Centimeter, 9*vg.Centimeter, path); err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	return nil
}

// faultShading shades fault windows across the whole plot height.
type faultShading struct {
	windows []Window
	origin  int64
}

func (f *faultShading) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, w := range f.windows {
		x0, x1 := trX(float64(w.Start-f.origin)/1e9), trX(float64(w.End-f.origin)/1e9)
		c.FillPolygon(faultColor, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

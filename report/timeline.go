package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/history"
)

// Window is a span of time with a fault in force.
type Window struct {
	Start, End int64 // CLOCK_MONOTONIC ns
	Label      string
	Target     string // what the fault acted on ("client 2 (process 14)", "redis-1")
	Open       bool   // never healed within the history: End is the history's end
	Instant    bool   // a fault over once made (history.Window.Instant)
	AtGrant    bool   // it struck at a grant (history.Window.AtGrant)
	InPlace    int64  // when the injection was in place (history.Window.InPlace)
}

// Windows are a history's fault windows as plots shade them: a fault never
// healed within the history runs to end (its last event).
func Windows(ws []history.Window, end int64) []Window {
	out := make([]Window, 0, len(ws))
	for _, w := range ws {
		stop := w.End
		if stop == 0 {
			stop = end
		}
		out = append(out, Window{Start: w.Start, End: stop, Label: w.Fault, Target: w.Target, Open: w.End == 0, Instant: w.Instant, AtGrant: w.AtGrant, InPlace: w.InPlace})
	}
	return out
}

// Timeline is what a timeline plot shows.
type Timeline struct {
	Title     string
	Origin    int64                         // time zero, ns
	End       int64                         // end of the history, ns (open intervals run to here)
	Intervals map[string][]checker.Interval // per key
	Grants    []checker.DoubleGrant         // overlaps, drawn in red
	Faults    []Window                      // shaded
	Stalls    []Window                      // the lab's own stalls, hatched
	// Slot is the client (its slot in the case, as faults name it
	// "client N") that ran process proc; nil: lanes are processes.
	Slot func(proc int) (slot int, ok bool)
	// Procs are processes that get a lane even without a hold.
	Procs []int
	// For the interactive page (Data): the violations, where an event
	// is (Event: its time and process, by index), and the page showing
	// the history's lines (History) of the file HistoryFile.
	Violations  []checker.Violation
	Event       func(index int64) (t int64, proc int, ok bool)
	History     string
	HistoryFile string
}

var (
	holdColor = color.RGBA{R: 0x33, G: 0x66, B: 0xcc, A: 0xff}
	// Held past the lease the holder believed in, and that lease's end.
	pastColor   = color.RGBA{R: 0x9a, G: 0xb0, B: 0xe0, A: 0xff}
	expiryColor = color.RGBA{R: 0x1a, G: 0x7f, B: 0x37, A: 0xff}
	grantColor  = color.RGBA{R: 0xe0, G: 0x10, B: 0x10, A: 0xff}
	faultColor  = color.NRGBA{R: 0xf5, G: 0xc8, B: 0x42, A: 0x70}
	// A fault on one client, on its lane only.
	clientFaultColor = color.NRGBA{R: 0xf5, G: 0x96, B: 0x14, A: 0x70}
	faultTextColor   = color.RGBA{R: 0x8a, G: 0x4b, B: 0x00, A: 0xff}
	stallColor       = color.RGBA{R: 0x80, G: 0x00, B: 0xc0, A: 0xff}
)

// maxJoinedGrants: a line joins the two holders of each double grant while
// there are this few; more (one pause's dozens) would read as a bar code.
const maxJoinedGrants = 20

// maxLanes keeps the plot readable; more lanes are cut with a note.
const maxLanes = 64

// timelinePlotter draws the lanes. Intervals are merged per lane at pixel
// resolution: 60 s of 32 busy clients is hundreds of thousands of tenures,
// but only a few thousand distinct pixels.
type timelinePlotter struct {
	tl     *Timeline
	lanes  []string
	laneOf func(checker.Interval) int
	// faultLanes are the lanes each fault hit (nil: every lane).
	faultLanes [][]int
}

// timelineCanvas places the history's times and the lanes on the canvas
// being drawn.
type timelineCanvas struct {
	c        draw.Canvas
	trX, trY func(float64) vg.Length
	width    int   // pixel columns
	origin   int64 // time zero, ns
}

// x is the canvas position of time t.
func (tc *timelineCanvas) x(t int64) vg.Length { return tc.trX(float64(t-tc.origin) / 1e9) }

// col is the pixel column of time t, clamped to the canvas.
func (tc *timelineCanvas) col(t int64) int {
	x := int(tc.x(t) - tc.c.Min.X)
	return min(max(x, 0), tc.width-1)
}

// y is the canvas position of a lane's centre.
func (tc *timelineCanvas) y(lane int) vg.Length { return tc.trY(float64(lane)) }

// rect fills x0..x1 on a lane, h lanes high, centred on it.
func (tc *timelineCanvas) rect(x0, x1 vg.Length, lane int, h float64, clr color.Color) {
	y0, y1 := tc.trY(float64(lane)-h/2), tc.trY(float64(lane)+h/2)
	tc.c.FillPolygon(clr, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
}

// Plot draws the timeline in layers, each over the ones before.
func (tp *timelinePlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	tc := &timelineCanvas{c: c, trX: trX, trY: trY, width: int(c.Max.X-c.Min.X) + 1, origin: tp.tl.Origin}
	if tc.width < 1 {
		return
	}
	tp.drawFaults(tc, p.Legend.TextStyle)
	tp.drawHolds(tc)
	tp.drawGrants(tc)
	// The lab's stalls last, over everything.
	tp.drawStalls(tc)
}

// drawFaults shades the fault windows: a client's on its lane, a server's
// across every lane and named at its start, over the lanes, where the
// name does not run into the last one.
func (tp *timelinePlotter) drawFaults(tc *timelineCanvas, legend draw.TextStyle) {
	style := draw.TextStyle{Color: faultTextColor, Font: legend.Font, Handler: legend.Handler, XAlign: draw.XLeft, YAlign: draw.YBottom}
	labelEnd := tc.c.Min.X
	for i, w := range tp.tl.Faults {
		x0, x1 := tc.x(w.Start), tc.x(w.End)
		if ls := tp.lanesHit(i); ls != nil {
			for _, l := range ls {
				if l < len(tp.lanes) {
					tc.rect(x0, x1, l, 1, clientFaultColor)
				}
			}
			continue
		}
		bottom, top := tc.c.Min.Y, tc.c.Max.Y
		tc.c.FillPolygon(faultColor, []vg.Point{{X: x0, Y: bottom}, {X: x1, Y: bottom}, {X: x1, Y: top}, {X: x0, Y: top}})
		label := strings.TrimSpace(w.Label + " " + w.Target)
		if x0 >= labelEnd {
			tc.c.FillText(style, vg.Point{X: x0 + 2, Y: tc.trY(float64(len(tp.lanes)) - 0.6)}, label)
			labelEnd = x0 + 2 + style.Width(label) + 4
		}
	}
}

// lanesHit are the lanes fault i hit (nil: every lane).
func (tp *timelinePlotter) lanesHit(i int) []int {
	if i < len(tp.faultLanes) {
		return tp.faultLanes[i]
	}
	return nil
}

// How a pixel column of a lane was held.
const (
	heldWithin uint8 = 1 // within the holder's believed lease
	heldPast   uint8 = 2 // past it
)

// drawHolds draws the holder intervals, merged per pixel column: held
// within its believed lease, and held past it (paler, the lease's expiry
// marked), which few are.
func (tp *timelinePlotter) drawHolds(tc *timelineCanvas) {
	cols, expiries := tp.holdColumns(tc)
	for lane, cs := range cols {
		tc.fillRuns(lane, cs)
	}
	if len(expiries) <= maxJoinedGrants*10 {
		for _, e := range expiries {
			y := (tc.trY(1) - tc.trY(0)) * 0.4
			tc.c.StrokeLine2(draw.LineStyle{Color: expiryColor, Width: vg.Points(1.5)}, e.X, e.Y-y, e.X, e.Y+y)
		}
	}
}

// holdColumns are, per lane, how each pixel column was held (0: not), and
// a lane's centre at each outlived lease's end.
func (tp *timelinePlotter) holdColumns(tc *timelineCanvas) (cols [][]uint8, expiries []vg.Point) {
	cols = make([][]uint8, len(tp.lanes))
	for i := range cols {
		cols[i] = make([]uint8, tc.width)
	}
	for _, ivs := range tp.tl.Intervals {
		for _, iv := range ivs {
			lane := tp.laneOf(iv)
			if lane < 0 {
				continue
			}
			end := iv.End
			if end == checker.Open {
				end = tp.tl.End
			}
			split := end
			if iv.ValidUntil != 0 && iv.ValidUntil < end {
				split = max(iv.ValidUntil, iv.Start)
				expiries = append(expiries, vg.Point{X: tc.x(split), Y: tc.y(lane)})
			}
			for x := tc.col(iv.Start); x <= tc.col(split); x++ {
				cols[lane][x] = heldWithin
			}
			for x := tc.col(split) + 1; x <= tc.col(end); x++ {
				cols[lane][x] = max(cols[lane][x], heldPast)
			}
		}
	}
	return cols, expiries
}

// fillRuns draws a lane's held pixel columns, a bar per run of one kind.
func (tc *timelineCanvas) fillRuns(lane int, cs []uint8) {
	for x := 0; x < tc.width; {
		if cs[x] == 0 {
			x++
			continue
		}
		start, kind := x, cs[x]
		for x < tc.width && cs[x] == kind {
			x++
		}
		clr := holdColor
		if kind == heldPast {
			clr = pastColor
		}
		tc.rect(tc.c.Min.X+vg.Length(start), tc.c.Min.X+vg.Length(x)+0.5, lane, 0.6, clr)
	}
}

// drawGrants draws the double grants: the overlapping part in red on both
// lanes, at least two pixels wide, and a red line joining the lanes.
func (tp *timelinePlotter) drawGrants(tc *timelineCanvas) {
	for _, g := range tp.tl.Grants {
		endHeld := g.Held.End
		if endHeld == checker.Open {
			endHeld = tp.tl.End
		}
		s, e := g.Second.Start, min(endHeld, g.Second.End)
		if g.Second.End == checker.Open {
			e = endHeld
		}
		x0 := tc.x(s)
		x1 := max(tc.x(e), x0+2)
		for _, iv := range []checker.Interval{g.Held, g.Second} {
			if lane := tp.laneOf(iv); lane >= 0 {
				tc.rect(x0, x1, lane, 0.9, grantColor)
			}
		}
		l1, l2 := tp.laneOf(g.Held), tp.laneOf(g.Second)
		if l1 >= 0 && l2 >= 0 && len(tp.tl.Grants) <= maxJoinedGrants {
			tc.c.StrokeLine2(draw.LineStyle{Color: grantColor, Width: vg.Points(1)}, x0, tc.y(l1), x0, tc.y(l2))
		}
	}
}

// drawStalls hatches the lab's stalls diagonally across every lane, at
// least two pixels wide, through which the holders and a fault window's
// flat yellow show.
func (tp *timelinePlotter) drawStalls(tc *timelineCanvas) {
	for _, w := range tp.tl.Stalls {
		x0 := tc.x(w.Start)
		x1 := max(tc.x(w.End), x0+2)
		hatch(tc.c, x0, x1, stallColor)
	}
}

type laneTicks []string

func (l laneTicks) Ticks(min, max float64) []plot.Tick {
	step := 1
	if len(l) > 32 {
		step = (len(l) + 31) / 32
	}
	var ticks []plot.Tick
	for i := 0; i < len(l); i++ {
		t := plot.Tick{Value: float64(i)}
		if i%step == 0 {
			t.Label = l[i]
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// outlived reports a holder that went on past its believed lease.
func (tl *Timeline) outlived() bool {
	for _, ivs := range tl.Intervals {
		for _, iv := range ivs {
			if iv.ValidUntil != 0 && iv.ValidUntil < iv.End {
				return true
			}
		}
	}
	return false
}

// clients are the processes that held a lock.
func (tl *Timeline) clients() map[int]bool {
	procs := map[int]bool{}
	for _, ivs := range tl.Intervals {
		for _, iv := range ivs {
			procs[iv.Proc] = true
		}
	}
	return procs
}

// lanes are the timeline's lane names (at most maxLanes; cut: how many
// more there were) and the lane of an interval (-1: a lane cut). A lane per
// client, or a lane per key when there are more clients than lanes (a long
// history of many clients, whose first lanes alone would say little): the
// one rule for check's timelines, the runner's and the interactive page's.
func (tl *Timeline) lanes() (names []string, laneOf func(checker.Interval) int, cut int) {
	names, laneOf, cut, _ = tl.pngLanes()
	return names, laneOf, cut
}

// pngLanes is lanes, and the lanes each fault hit (nil: every lane).
func (tl *Timeline) pngLanes() (names []string, laneOf func(checker.Interval) int, cut int, faults [][]int) {
	lanes, laneOfProc, laneOfKey, slotLane := tl.pageLanes(maxLanes)
	for _, w := range tl.Faults {
		faults = append(faults, faultLanes(w.Target, slotLane, laneOfProc, laneOfKey != nil))
	}
	for _, l := range lanes {
		names = append(names, l.Name)
	}
	if len(names) > maxLanes {
		cut = len(names) - maxLanes
		names = names[:maxLanes]
	}
	laneOf = func(iv checker.Interval) int {
		i := -1
		if laneOfKey != nil {
			i = laneOfKey(iv.Key)
		} else {
			i = laneOfProc(iv.Proc)
		}
		if i >= maxLanes {
			return -1
		}
		return i
	}
	return names, laneOf, cut, faults
}

// PlotTimeline draws the timeline PNG, its lanes as Timeline.lanes says.
func PlotTimeline(path string, tl *Timeline) error {
	names, laneOf, cut, faultLanes := tl.pngLanes()
	if len(names) == 0 {
		return fmt.Errorf("timeline %s: no holder intervals", path)
	}
	p := plot.New()
	p.Title.Text = tl.Title
	if cut > 0 {
		p.Title.Text += fmt.Sprintf(" (first %d lanes of %d)", maxLanes, maxLanes+cut)
	}
	p.X.Label.Text = "seconds"
	p.X.Min = 0
	p.X.Max = math.Max(float64(tl.End-tl.Origin)/1e9, 1e-6)
	p.Y.Tick.Marker = laneTicks(names)
	p.Add(&timelinePlotter{tl: tl, lanes: names, laneOf: laneOf, faultLanes: faultLanes})
	p.Legend.Top = true
	entries := 1
	p.Legend.Add(fmt.Sprintf("holding (%d double grants in red)", len(tl.Grants)), legendBox{holdColor})
	if tl.outlived() {
		entries++
		p.Legend.Add("held past its believed lease (its end marked)", legendBox{pastColor})
	}
	if len(tl.Faults) > 0 {
		entries++
		p.Legend.Add("fault in force (a client's: on its lane)", legendBox{faultColor})
	}
	if len(tl.Stalls) > 0 {
		entries++
		p.Legend.Add(fmt.Sprintf("the lab stalled (%d)", len(tl.Stalls)), legendHatch{stallColor})
	}
	// Room above the lanes for the legend: its inches added to the
	// picture, and as many lanes' worth of y added to the axis, so it
	// covers no lane however many lanes and entries there are.
	n := float64(len(names))
	legend := 0.2*float64(entries) + 0.1
	height := 2 + 0.22*n + legend
	extra := legend * (n + 1) / (height - 0.9 - legend)
	p.Y.Min, p.Y.Max = -0.7, n-0.4+extra
	return savePlot(p, 12*vg.Inch, vg.Length(height)*vg.Inch, path)
}

type legendBox struct{ c color.Color }

func (b legendBox) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.c, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// hatch draws diagonal lines over the canvas between x0 and x1.
func hatch(c draw.Canvas, x0, x1 vg.Length, clr color.Color) {
	style := draw.LineStyle{Color: clr, Width: vg.Points(1)}
	const gap = vg.Length(6)
	h := c.Max.Y - c.Min.Y
	clip := func(x vg.Length) vg.Length { return min(max(x, x0), x1) }
	// Each line rises one gap to the right per gap upwards, from the
	// bottom edge (or the left one) to the top edge (or the right one).
	for start := x0 - h; start < x1; start += gap {
		ax, bx := clip(start), clip(start+h)
		if ax >= bx {
			continue
		}
		c.StrokeLine2(style, ax, c.Min.Y+(ax-start), bx, c.Min.Y+(bx-start))
	}
	c.StrokeLine2(style, x0, c.Min.Y, x0, c.Max.Y)
	c.StrokeLine2(style, x1, c.Min.Y, x1, c.Max.Y)
}

type legendHatch struct{ c color.Color }

func (b legendHatch) Thumbnail(c *draw.Canvas) { hatch(*c, c.Min.X, c.Max.X, b.c) }

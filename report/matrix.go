package report

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/verdict"
)

// Matrix is the known-outcome matrix as run: approaches (rows) against
// faults (columns), expected versus observed per cell.
type Matrix struct {
	Generated time.Time `json:"generated"`
	Command   string    `json:"command"`
	Runs      int       `json:"runs_per_cell"`
	// MinCatchRate: the share of runs a cell expecting a violation had to
	// catch it in (0: one run was enough).
	MinCatchRate float64 `json:"min_catch_rate,omitempty"`
	// Model is what the runs' histories were judged against.
	Model      checker.Model `json:"model,omitempty"`
	Approaches []string      `json:"approaches"`
	Faults     []string      `json:"faults"`
	Cells      []MatrixCell  `json:"cells"`
}

// MatrixCell is one approach under one fault.
type MatrixCell struct {
	Approach string `json:"approach"`
	Fault    string `json:"fault"`
	Applies  bool   `json:"applies"` // false: n/a
	// NotChosen: the cell applies but this run left it out (--cells).
	NotChosen bool   `json:"not_chosen,omitempty"`
	Why       string `json:"why,omitempty"`
	Source    string `json:"source,omitempty"`
	// Expected are the outcomes the literature expects; Observed every
	// outcome seen in any run.
	Expected         []string `json:"expected,omitempty"`
	Observed         []string `json:"observed,omitempty"`
	ExpectsViolation bool     `json:"expects_violation,omitempty"`
	Ran              int      `json:"ran"`
	Agreed           int      `json:"agreed"`
	Contradicted     int      `json:"contradicted"` // runs where something happened that must not
	Undecided        int      `json:"undecided"`
	// LabStalled counts the undecided runs the lab itself stalled in
	// (during the events that decide them).
	LabStalled int `json:"lab_stalled,omitempty"`
	// Caught counts the runs that showed the expected violation (catch
	// rate = Caught/Ran); TimesToViolation how soon after the fault each did.
	Caught           int       `json:"caught,omitempty"`
	TimesToViolation []float64 `json:"times_to_violation_s,omitempty"`
	Operations       int64     `json:"operations"` // grants checked, over all runs
	// LockLoss is how soon holders whose lock was taken away were told,
	// over all runs; nil: none was.
	LockLoss     *LockLoss      `json:"lock_loss,omitempty"`
	Status       verdict.Status `json:"status"`
	Explanations []string       `json:"explanations,omitempty"`
	RunCases     []string       `json:"run_cases,omitempty"` // the cases
	// RunPages are their pages (timeline-<case>.html: the verdict and the
	// timeline), "" for a run that drew none (a safe one under --lean).
	RunPages []string `json:"run_pages,omitempty"`
}

// judged says which model judged the runs, for a sentence's end.
func (m *Matrix) judged() string {
	if m.Model == "" {
		return ""
	}
	return ", histories judged under the model " + m.Model.Describe()
}

// Cell returns the cell of approach a under fault f.
func (m *Matrix) Cell(a, f string) (MatrixCell, bool) {
	for _, c := range m.Cells {
		if c.Approach == a && c.Fault == f {
			return c, true
		}
	}
	return MatrixCell{}, false
}

// CatchRate is the share of the decided runs that showed the expected
// violation, by verdict.Tally's rule.
func (c MatrixCell) CatchRate() float64 { return c.tally().CatchRate() }

// tally is the cell's runs as verdict.Tally counts them, its catches as
// the runs that agreed.
func (c MatrixCell) tally() verdict.Tally {
	return verdict.Tally{ExpectsViolation: c.ExpectsViolation, Runs: c.Ran, Agreed: c.Caught, Undecided: c.Undecided}
}

// caught is the cell's catches over its decided runs, and its undecided
// runs if any.
func (c MatrixCell) caught() string {
	s := fmt.Sprintf("%d/%d", c.Caught, c.tally().Decided())
	if c.Undecided > 0 {
		s += fmt.Sprintf(" (%d undecided)", c.Undecided)
	}
	return s
}

func (c MatrixCell) medianTimeToViolation() (float64, bool) {
	if len(c.TimesToViolation) == 0 {
		return 0, false
	}
	t := append([]float64(nil), c.TimesToViolation...)
	sort.Float64s(t)
	return t[len(t)/2], true
}

// short is how a cell reads in the table.
func (c MatrixCell) short() string {
	if !c.Applies {
		return c.absent()
	}
	exp := strings.Join(c.Expected, " + ")
	obs := "no violation"
	if len(c.Observed) > 0 {
		obs = strings.Join(c.Observed, ", ")
	}
	s := fmt.Sprintf("expected %s; observed %s", exp, obs)
	if c.ExpectsViolation {
		s += "; caught " + c.caught()
		if t, ok := c.medianTimeToViolation(); ok {
			s += fmt.Sprintf(" (median %.1f s after the fault)", t)
		}
	} else {
		s += fmt.Sprintf("; %d/%d runs clean, %d grants checked", c.Agreed, c.Ran, c.Operations)
	}
	if c.LockLoss != nil {
		s += "; lock loss: " + c.LockLoss.String()
	}
	if c.LabStalled > 0 {
		s += fmt.Sprintf("; %d run(s) inconclusive: the lab stalled", c.LabStalled)
	}
	if c.Status != verdict.Agrees {
		s = "**" + strings.ToUpper(string(c.Status)) + ": " + s + "**"
	}
	return s
}

// notChosenMark is how a cell reads that applies but was left out of this
// run (--cells), so it is not mistaken for n/a.
const notChosenMark = "–"

// absent is how a cell that did not run reads: n/a, or left out.
func (c MatrixCell) absent() string {
	if c.NotChosen {
		return notChosenMark
	}
	return "n/a"
}

// writeTable writes the table: one row per approach, one column per
// fault, each cell as cell renders it.
func writeTable(b *bytes.Buffer, m *Matrix, cell func(MatrixCell) string) {
	fmt.Fprintf(b, "| approach | %s |\n|---|%s\n", strings.Join(m.Faults, " | "), strings.Repeat("---|", len(m.Faults)))
	for _, a := range m.Approaches {
		row := make([]string, len(m.Faults))
		for i, f := range m.Faults {
			c, _ := m.Cell(a, f)
			row[i] = cell(c)
		}
		fmt.Fprintf(b, "| %s | %s |\n", a, strings.Join(row, " | "))
	}
}

// MatrixMarkdown is matrix.md: one row per approach, one column per fault,
// mismatches in bold, then each cell's mechanism and source.
func MatrixMarkdown(m *Matrix) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The known-outcome matrix\n\nGenerated %s by `%s`, %d run(s) per cell%s.\n\n",
		m.Generated.Format("2006-01-02"), m.Command, m.Runs, m.judged())
	writeTable(&b, m, MatrixCell.short)
	b.WriteString("\n## Why each cell is expected so\n\n")
	for _, f := range m.Faults {
		fmt.Fprintf(&b, "### %s\n\n", f)
		for _, a := range m.Approaches {
			c, _ := m.Cell(a, f)
			if c.NotChosen {
				fmt.Fprintf(&b, "- **%s**: %s; not run this time (--cells).\n", a, strings.Join(c.Expected, " + "))
				continue
			}
			if !c.Applies {
				if c.Why != "" {
					fmt.Fprintf(&b, "- **%s**: n/a, %s.\n", a, c.Why)
				}
				continue
			}
			fmt.Fprintf(&b, "- **%s**: %s. %s (%s).\n", a, strings.Join(c.Expected, " + "), c.Why, c.Source)
			for _, e := range c.Explanations {
				fmt.Fprintf(&b, "  - %s\n", e)
			}
		}
		b.WriteString("\n")
	}
	writeCatchRates(&b, m)
	return b.Bytes()
}

// Catch-rate target of the lab: a cell that expects a violation shows it
// in at least this share of runs, each within this long of the fault.
const (
	catchRateTarget = 0.95
	catchTimeTarget = 30.0 // seconds
)

// writeCatchRates lists every cell that expects a violation with how
// often and how soon the lab caught it, against the catch-rate target.
func writeCatchRates(b *bytes.Buffer, m *Matrix) {
	var rows []MatrixCell
	for _, c := range m.Cells {
		if c.Applies && c.ExpectsViolation && c.Ran > 0 {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		return
	}
	met := 0
	var lines bytes.Buffer
	for _, c := range rows {
		median, slowest := "-", "-"
		if t, ok := c.medianTimeToViolation(); ok {
			median = fmt.Sprintf("%.1f s", t)
			slowest = fmt.Sprintf("%.1f s", slices.Max(c.TimesToViolation))
		}
		ok := c.meetsCatchTarget()
		verdict := "yes"
		if ok {
			met++
		} else {
			verdict = "**no**"
		}
		fmt.Fprintf(&lines, "| %s | %s | %s | %s | %.0f%% | %s | %s | %s |\n", c.Approach, c.Fault,
			strings.Join(c.Expected, " + "), c.caught(), 100*c.CatchRate(), median, slowest, verdict)
	}
	fmt.Fprintf(b, "## Catch rates\n\n%d of %d cells that expect a violation caught it in at least %.0f%% of their decided runs, "+
		"every time within %.0f s of the fault.\n\n", met, len(rows), 100*catchRateTarget, catchTimeTarget)
	b.WriteString("| approach | fault | expected | caught | rate | median after the fault | slowest | target met |\n|---|---|---|---|---|---|---|---|\n")
	b.Write(lines.Bytes())
	b.WriteString("\n")
}

// meetsCatchTarget reports whether a cell expecting a violation caught it
// often and soon enough: catchRateTarget of its runs, each double grant
// within catchTimeTarget of the fault (a violation with no double grant,
// a lost update alone, has no time to judge).
func (c MatrixCell) meetsCatchTarget() bool {
	if c.CatchRate() < catchRateTarget {
		return false
	}
	return len(c.TimesToViolation) == 0 || slices.Max(c.TimesToViolation) <= catchTimeTarget
}

func abbrev(outcome string) string {
	o, not := strings.CutPrefix(outcome, "not:")
	o, may := strings.CutPrefix(o, "may:")
	if r, ok := verdict.Outcome(o).Row(); ok {
		o = r.Abbrev
	}
	switch {
	case not:
		return "not " + o
	case may:
		return o + "?"
	}
	return o
}

func abbrevs(outcomes []string) string {
	out := make([]string, len(outcomes))
	for i, o := range outcomes {
		out[i] = abbrev(o)
	}
	return strings.Join(out, "+")
}

// compact is how a cell reads in the compact table: the expected outcome
// and the runs that agreed (for an expected violation, the runs that
// showed it); a mismatch in bold with what was seen.
func (c MatrixCell) compact() string {
	if !c.Applies {
		return c.absent()
	}
	agreed := c.Agreed
	if c.ExpectsViolation {
		agreed = c.Caught
	}
	s := fmt.Sprintf("%s %d/%d", abbrevs(c.Expected), agreed, c.Ran)
	if c.Status != verdict.Agrees {
		seen := "none"
		if len(c.Observed) > 0 {
			seen = abbrevs(c.Observed)
		}
		s = fmt.Sprintf("**%s, saw %s**", s, seen)
	}
	return s
}

// MatrixCompact is the matrix on one screen, for a README: per cell the
// expected outcome in short and how many runs bore it out, mismatches in
// bold, and a legend of the abbreviations used.
func MatrixCompact(m *Matrix) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Generated %s by `%s`, %d run(s) per cell; a cell reads expected outcome, then runs that bore it out.\n\n",
		m.Generated.Format("2006-01-02"), m.Command, m.Runs)
	used, maybe := map[string]bool{}, false
	writeTable(&b, m, func(c MatrixCell) string {
		for _, o := range append(append([]string{}, c.Expected...), c.Observed...) {
			bare, may := strings.CutPrefix(strings.TrimPrefix(o, "not:"), "may:")
			used[bare], maybe = true, maybe || may
		}
		return c.compact()
	})
	var legend []string
	if maybe {
		legend = append(legend, "X? = X may show (predicted, not required)")
	}
	for _, c := range m.Cells {
		if c.NotChosen {
			legend = append(legend, notChosenMark+" = applies, not run this time (--cells)")
			break
		}
	}
	for _, r := range verdict.Rows() {
		if used[string(r.Outcome)] && r.Abbrev != string(r.Outcome) {
			legend = append(legend, fmt.Sprintf("%s = %s", r.Abbrev, r.Legend))
		}
	}
	if len(legend) > 0 {
		fmt.Fprintf(&b, "\n%s.\n", strings.Join(legend, "; "))
	}
	return b.Bytes()
}

// Outcome colours of the heat map.
var (
	safeColor     = color.RGBA{R: 0x4c, G: 0xaf, B: 0x50, A: 0xff} // expected safe, observed safe
	violColor     = color.RGBA{R: 0xe5, G: 0x73, B: 0x73, A: 0xff} // a violation, as expected
	blockedColor  = color.RGBA{R: 0xff, G: 0xb7, B: 0x4d, A: 0xff} // blocked / unavailable
	naColor       = color.RGBA{R: 0xee, G: 0xee, B: 0xee, A: 0xff}
	undecColor    = color.RGBA{R: 0x90, G: 0xa4, B: 0xae, A: 0xff}
	mismatchColor = color.RGBA{A: 0xff}
)

// PlotMatrix draws the heat map: approach rows, fault columns, colour =
// what was observed, a black frame and an X where it differs from what was
// expected.
func PlotMatrix(path string, m *Matrix) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("known-outcome matrix, %d run(s) per cell (X: observed differs from expected)", m.Runs)
	p.X.Label.Text = "fault"
	p.HideY()
	rows, cols := len(m.Approaches), len(m.Faults)
	p.X.Min, p.X.Max = 0, float64(cols)
	p.Y.Min, p.Y.Max = 0, float64(rows)
	var cells []matrixCellBox
	for i, a := range m.Approaches {
		for j, f := range m.Faults {
			c, _ := m.Cell(a, f)
			cells = append(cells, matrixCellBox{x: float64(j), y: float64(rows - 1 - i), c: c})
		}
	}
	p.Add(&matrixBoxes{cells: cells})
	var ticks []plot.Tick
	for j, f := range m.Faults {
		ticks = append(ticks, plot.Tick{Value: float64(j) + 0.5, Label: f})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(&rowLabels{names: m.Approaches})
	w := vg.Length(260+110*cols) * vg.Millimeter / 4
	// The title is as wide as its words, not as the cells: a matrix of a
	// column or two would cut it at both ends.
	w = max(w, p.Title.TextStyle.Width(p.Title.Text)+8*vg.Millimeter)
	h := vg.Length(90+22*rows) * vg.Millimeter / 4
	if err := savePlot(p, w, h, path); err != nil {
		return fmt.Errorf("matrix plot: %w", err)
	}
	return nil
}

type matrixCellBox struct {
	x, y float64
	c    MatrixCell
}

type matrixBoxes struct{ cells []matrixCellBox }

func cellColor(c MatrixCell) color.Color {
	switch {
	case !c.Applies || c.Ran == 0:
		return naColor
	case c.Status == verdict.Undecided:
		return undecColor
	}
	for _, o := range c.Observed {
		if r, ok := verdict.Outcome(o).Row(); !ok || r.Unsafe {
			return violColor
		}
	}
	for _, o := range c.Observed {
		if verdict.Outcome(o).Liveness() {
			return blockedColor
		}
	}
	return safeColor
}

func (mb *matrixBoxes) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, b := range mb.cells {
		x0, y0 := tx(b.x+0.04), ty(b.y+0.08)
		x1, y1 := tx(b.x+0.96), ty(b.y+0.92)
		rect := vg.Path{}
		rect.Move(vg.Point{X: x0, Y: y0})
		rect.Line(vg.Point{X: x1, Y: y0})
		rect.Line(vg.Point{X: x1, Y: y1})
		rect.Line(vg.Point{X: x0, Y: y1})
		rect.Close()
		c.SetColor(cellColor(b.c))
		c.Fill(rect)
		label := b.c.absent() // n/a, or left out (--cells)
		if b.c.Applies && b.c.Ran > 0 {
			if b.c.ExpectsViolation {
				label = fmt.Sprintf("caught %d/%d", b.c.Caught, b.c.Ran)
			} else {
				label = fmt.Sprintf("clean %d/%d", b.c.Agreed, b.c.Ran)
			}
		}
		c.FillText(draw.TextStyle{Color: color.Black, Font: p.X.Tick.Label.Font, XAlign: draw.XCenter, YAlign: draw.YCenter,
			Handler: p.X.Tick.Label.Handler}, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, label)
		if b.c.Status == verdict.Contradicts {
			c.SetLineStyle(draw.LineStyle{Color: mismatchColor, Width: vg.Points(2)})
			c.Stroke(rect)
			cross := vg.Path{}
			cross.Move(vg.Point{X: x0, Y: y0})
			cross.Line(vg.Point{X: x1, Y: y1})
			cross.Move(vg.Point{X: x0, Y: y1})
			cross.Line(vg.Point{X: x1, Y: y0})
			c.Stroke(cross)
		}
	}
}

// rowLabels writes the approach names left of the rows.
type rowLabels struct{ names []string }

func (r *rowLabels) Plot(c draw.Canvas, p *plot.Plot) {
	_, ty := p.Transforms(&c)
	n := len(r.names)
	for i, name := range r.names {
		y := ty(float64(n-1-i) + 0.5)
		c.FillText(draw.TextStyle{Color: color.Black, Font: p.X.Tick.Label.Font, XAlign: draw.XRight, YAlign: draw.YCenter,
			Handler: p.X.Tick.Label.Handler}, vg.Point{X: c.Min.X - vg.Millimeter, Y: y}, name)
	}
}

// GlyphBoxes reserves room left of the plot for the row labels.
func (r *rowLabels) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	longest := 0
	for _, n := range r.names {
		longest = max(longest, len(n))
	}
	w := vg.Length(float64(longest)) * p.X.Tick.Label.Font.Size * 0.55
	return []plot.GlyphBox{{X: 0, Y: 0.5, Rectangle: vg.Rectangle{Min: vg.Point{X: -w - vg.Millimeter*2}, Max: vg.Point{}}}}
}

// WriteMatrix writes matrix.md, matrix-compact.md (the README's table),
// matrix.json, matrix.png and matrix.html into dir, and the JUnit file when
// junit is set. A heat map that cannot be drawn goes to warn, not to the
// error: the tables say the same.
func WriteMatrix(dir string, m *Matrix, junit string, warn func(error)) error {
	for _, f := range []struct {
		name string
		data []byte
	}{{"matrix.md", MatrixMarkdown(m)}, {"matrix-compact.md", MatrixCompact(m)}} {
		if err := WriteFileAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	if err := WriteJSON(filepath.Join(dir, "matrix.json"), m); err != nil {
		return err
	}
	if err := PlotMatrix(filepath.Join(dir, "matrix.png"), m); err != nil {
		warn(err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "matrix.html"), MatrixHTML(m)); err != nil {
		return err
	}
	if junit == "" {
		return nil
	}
	b, err := MatrixJUnit(m)
	if err != nil {
		return err
	}
	return WriteFileAtomic(junit, b)
}

// MatrixJUnit is JUnit XML with one test case per applicable cell: a
// contradicted cell fails with its explanation, so CI systems show which
// pair disagreed.
func MatrixJUnit(m *Matrix) ([]byte, error) {
	j := NewJUnit("locklab matrix")
	for _, c := range m.Cells {
		name, class := c.Approach+" under "+c.Fault, "locklab.matrix."+c.Fault
		switch {
		case c.NotChosen:
			j.Skip(class, name, "not run this time (--cells)")
		case !c.Applies:
			j.Skip(class, name, "n/a: the fault does not apply to this approach")
		case c.Status == verdict.Contradicts:
			j.Fail(class, name, 0, "expected "+strings.Join(c.Expected, " + ")+", observed "+strings.Join(c.Observed, ", "),
				strings.Join(c.Explanations, "\n"))
		case c.Status == verdict.Undecided, c.Status == verdict.NotRun:
			j.Skip(class, name, string(c.Status))
		default:
			j.Pass(class, name, 0)
		}
	}
	return j.XML()
}

// MatrixHTML is matrix.html: the table with each cell linked to its runs'
// pages (each its verdict and its timeline), self-contained but for those
// files beside it.
func MatrixHTML(m *Matrix) []byte {
	var b bytes.Buffer
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html><meta charset=utf-8><title>locklab matrix</title>\n<style>body{font:14px sans-serif;margin:2em}"+
		"table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;font-size:12px}"+
		".bad{background:#fdd;font-weight:bold}.na{color:#999}</style>\n<h1>The known-outcome matrix</h1>\n"+
		"<p>Generated %s by <code>%s</code>, %d run(s) per cell; each run links to its page (its verdict, then its timeline).</p>\n<p><img src=matrix.png style='max-width:100%%'></p>\n<table><tr><th>approach</th>",
		m.Generated.Format("2006-01-02 15:04"), esc(m.Command), m.Runs)
	for _, f := range m.Faults {
		fmt.Fprintf(&b, "<th>%s</th>", esc(f))
	}
	b.WriteString("</tr>\n")
	for _, a := range m.Approaches {
		fmt.Fprintf(&b, "<tr><th>%s</th>", esc(a))
		for _, f := range m.Faults {
			c, _ := m.Cell(a, f)
			if !c.Applies {
				fmt.Fprintf(&b, "<td class=na>%s</td>", c.absent())
				continue
			}
			class := ""
			if c.Status != verdict.Agrees {
				class = " class=bad"
			}
			fmt.Fprintf(&b, "<td%s title='%s'>%s", class, esc(c.Why+" ("+c.Source+")"), esc(strings.ReplaceAll(c.short(), "**", "")))
			for i, rc := range c.RunCases {
				href := "index.html#" + rc
				if i < len(c.RunPages) && c.RunPages[i] != "" {
					href = c.RunPages[i]
				}
				fmt.Fprintf(&b, " <a href='%s'>run %d</a>", esc(href), i+1)
			}
			b.WriteString("</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n<p>Files: <a href=matrix.md>matrix.md</a>, <a href=matrix.json>matrix.json</a>, <a href=results.json>results.json</a>, <a href=history.jsonl.zst>history.jsonl.zst</a>.</p>\n")
	return b.Bytes()
}

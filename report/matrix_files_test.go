package report

import (
	"image/color"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/verdict"
)

// matrix.png's title is whole however few cells it has: no dark pixel at
// either edge of the band it is written in, and some between.
func TestMatrixPNGTitleFits(t *testing.T) {
	for _, faults := range [][]string{{"f"}, {"f", "g", "h"}} {
		m := &Matrix{Runs: 3, Approaches: []string{"redis-setnx-px-lua"}, Faults: faults}
		for _, f := range faults {
			m.Cells = append(m.Cells, MatrixCell{Approach: "redis-setnx-px-lua", Fault: f, Applies: true, Expected: []string{"safe"}, Ran: 3, Agreed: 3, Status: verdict.Agrees})
		}
		path := filepath.Join(t.TempDir(), "matrix.png")
		if err := PlotMatrix(path, m); err != nil {
			t.Fatal(err)
		}
		img := readPNG(t, path)
		b := img.Bounds()
		dark := func(x, y int) bool {
			r, g, bl, _ := color.GrayModel.Convert(img.At(x, y)).RGBA()
			return r < 0x8000 && g < 0x8000 && bl < 0x8000
		}
		band := b.Dy() / 8
		inside := 0
		for y := b.Min.Y; y < b.Min.Y+band; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if !dark(x, y) {
					continue
				}
				if x < b.Min.X+3 || x >= b.Max.X-3 {
					t.Fatalf("%d fault(s): the title touches the edge at (%d, %d) of %v: clipped", len(faults), x, y, b)
				}
				inside++
			}
		}
		if inside == 0 {
			t.Fatalf("%d fault(s): no title in the top %d rows", len(faults), band)
		}
	}
}

// A cell's runs open their pages; a run that drew none, its place in
// index.html.
func TestMatrixHTMLLinksRunPages(t *testing.T) {
	m := &Matrix{Runs: 2, Approaches: []string{"a"}, Faults: []string{"f"},
		Cells: []MatrixCell{{Approach: "a", Fault: "f", Applies: true, Expected: []string{"double-grant"}, Ran: 2, Agreed: 1, Status: verdict.Agrees,
			RunCases: []string{"a-f-1", "a-f-2"}, RunPages: []string{"timeline-a-f-1.html", ""}}}}
	page := string(MatrixHTML(m))
	for _, want := range []string{"<a href='timeline-a-f-1.html'>run 1</a>", "<a href='index.html#a-f-2'>run 2</a>"} {
		if !strings.Contains(page, want) {
			t.Errorf("matrix.html lacks %s", want)
		}
	}
}

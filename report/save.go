package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// savePlot renders p and writes it atomically: a full disk or a crash
// never leaves a half-written (or empty) image behind that looks like a
// result.
//
// gonum panics on some degenerate data (a log axis whose range reaches 0):
// a plot that cannot be drawn is an error, never a crash of the run whose
// results it illustrates.
func savePlot(p *plot.Plot, w, h vg.Length, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot %s: %v", path, r)
		}
	}()
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	wt, err := p.WriterTo(w, h, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return WriteFileAtomic(path, b.Bytes())
}

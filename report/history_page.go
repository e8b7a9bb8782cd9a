package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"path/filepath"
	"sort"

	"github.com/locklab/locklab/history"
)

// historyContext is how many lines around a cited one a history page shows.
const historyContext = 3

// maxHistoryLines bounds a history page.
const maxHistoryLines = 20_000

// HistoryPage is a page of the lines of a history file that a case's
// violations cite (by event index: line index+1), each with a few lines
// around it, anchored "#i<index>" for the timeline's links.
type HistoryPage struct {
	Name     string  // the page's file name
	Case     string  // whose violations cite them
	Timeline string  // the case's timeline page, linked back
	Cited    []int64 // event indices
}

// WriteHistoryPages reads the history file histName in dir once and writes
// each page into dir.
func WriteHistoryPages(dir, histName string, pages []HistoryPage) error {
	if len(pages) == 0 {
		return nil
	}
	want := map[int64]bool{} // every line any page shows
	shown := make([]map[int64]bool, len(pages))
	for i, p := range pages {
		shown[i] = map[int64]bool{}
		for _, c := range p.Cited {
			for j := max(c-historyContext, 0); j <= c+historyContext; j++ {
				if len(shown[i]) < maxHistoryLines {
					shown[i][j] = true
					want[j] = true
				}
			}
		}
	}
	f, err := history.Open(filepath.Join(dir, histName))
	if err != nil {
		return fmt.Errorf("history pages: %w", err)
	}
	defer f.Close()
	lines := map[int64][]byte{}
	rd := bufio.NewReaderSize(f, 1<<20)
	for n := int64(0); ; n++ {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && want[n] {
			lines[n] = bytes.TrimRight(line, "\n")
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("history pages: %s: %w", histName, err)
		}
	}
	for i, p := range pages {
		if err := WriteFileAtomic(filepath.Join(dir, p.Name), historyPageHTML(histName, p, shown[i], lines)); err != nil {
			return err
		}
	}
	return nil
}

func historyPageHTML(histName string, p HistoryPage, shown map[int64]bool, lines map[int64][]byte) []byte {
	cited := map[int64]bool{}
	for _, c := range p.Cited {
		cited[c] = true
	}
	var idx []int64
	for i := range shown {
		if _, ok := lines[i]; ok {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	var b bytes.Buffer
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html><html><head><meta charset=utf-8><title>%s: the history its violations cite</title>\n<style>"+
		"body{font-family:sans-serif;margin:1.2em}pre{font-size:12px;line-height:1.45}"+
		".l{display:block;white-space:pre-wrap}.n{display:inline-block;width:6em;color:#888;text-align:right;margin-right:1em;user-select:none}"+
		".c{background:#fff0f0}.c .n{color:#c00;font-weight:bold}.l:target{background:#ffe680;outline:2px solid #e0a000}.gap{color:#aaa}"+
		"</style></head><body>\n<h1>%s: the lines of %s its violations cite</h1>\n"+
		"<p>%d cited event(s) in red, with %d line(s) around each; event <i>i</i> is line <i>i</i>+1 of <a href=\"%s\">%s</a>. "+
		"Back to <a href=\"%s\">the timeline</a>.</p>\n<pre>",
		esc(p.Case), esc(p.Case), esc(histName), len(cited), historyContext, esc(histName), esc(histName), esc(p.Timeline))
	prev := int64(-2)
	for _, i := range idx {
		if prev >= 0 && i != prev+1 {
			b.WriteString("<span class=\"gap\">   \u22ee</span>\n")
		}
		class := "l"
		if cited[i] {
			class = "l c"
		}
		fmt.Fprintf(&b, "<span class=\"%s\" id=\"i%d\"><span class=\"n\">%d</span>%s</span>", class, i, i+1, esc(string(lines[i])))
		prev = i
	}
	b.WriteString("</pre>\n</body></html>\n")
	return b.Bytes()
}

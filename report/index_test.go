package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/metrics"
)

// index.html stands alone: the table, each case's verdict in words, its
// plots embedded (no file or network needed to see them), links to the
// rest; text from the run is escaped.
func TestWriteIndex(t *testing.T) {
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\nfake")
	for _, f := range []string{"timeline-a-c4.png", "throughput.png"} {
		if err := os.WriteFile(filepath.Join(dir, f), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &Results{RunID: "r1", StartedAt: time.Now(), Complete: false, Note: "interrupted: <Ctrl-C>",
		Artifacts: []string{"results.json", "throughput.png", "timeline-a-c4.png", "timeline-a-c4.html", "missing.png"},
		Runs: []Run{{Case: "a-c4", Approach: "a", Clients: 4, AcquiresPerSec: 1234, Status: "contradicts expectation",
			Explanation: "client 3 acquired k while client 1 held it <script>", Violations: []string{"double-grant: both valid (events 296, 292)"},
			Artifacts: []string{"timeline-a-c4.png", "timeline-a-c4.html", "visualization-k.html"}, Fairness: metrics.Fairness{Clients: 4, Jain: 0.5}}},
	}
	if err := WriteIndex(dir, "bench", r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"<title>locklab bench r1</title>", "<b>Incomplete</b>: interrupted: &lt;Ctrl-C&gt;",
		`<tr class="contradicts"><td><a href="#a-c4">a-c4</a></td><td>a</td><td>4</td><td>1234</td>`,
		"<td>0.50</td>", "client 3 acquired k while client 1 held it &lt;script&gt;", `<li>double-grant: both valid (events <a href="timeline-a-c4.html#event=296">296</a>, <a href="timeline-a-c4.html#event=292">292</a>)</li>`,
		`src="data:image/png;base64,`, `alt="throughput.png"`, `<img src="missing.png"`, `<a href="visualization-k.html">`,
		`<a href="results.json">results.json</a>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "http") {
		t.Errorf("index.html holds a script or a network address:\n%s", page)
	}
	// The case's own timeline is shown with the case, not twice, and
	// opens its page.
	if n := strings.Count(page, `alt="timeline-a-c4.png"`); n != 1 {
		t.Errorf("timeline shown %d times", n)
	}
	// A case opens with its verdict, then its timeline; the plots of the
	// whole run come after every case.
	verdictAt := strings.Index(page, `<h2 id="a-c4">`)
	pageAt := strings.Index(page, `<a href="timeline-a-c4.html"><b>Timeline`)
	imgAt := strings.Index(page, `<a href="timeline-a-c4.html"><img src="data:image/png;base64,`)
	notesAt := strings.Index(page, "<li>double-grant: both valid")
	plotsAt := strings.Index(page, `alt="throughput.png"`)
	if verdictAt < 0 || !(verdictAt < pageAt && pageAt < imgAt && imgAt < notesAt && notesAt < plotsAt) {
		t.Errorf("index.html's order: case %d, its page %d, its timeline %d, its violations %d, the run's plots %d; want rising",
			verdictAt, pageAt, imgAt, notesAt, plotsAt)
	}
}

package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/locklab/locklab/verdict"
)

// maxInlineImage bounds a plot embedded in index.html; a larger one is
// linked instead.
const maxInlineImage = 4 << 20

// indexData is what index.html shows: the verdict, the table, each case
// (its verdict, its timeline, what else it drew), then the plots of the
// whole run.
type indexData struct {
	Kind   string
	R      *Results
	Header []string
	Rows   []indexRow
	Plots  []indexImage // plots of the whole run
	Files  []string     // every artifact, linked
}

type indexRow struct {
	Run      Run
	Class    string
	Cells    []string
	Timeline *indexImage // the timeline PNG, shown first
	Page     string      // the case's own page (timeline-CASE.html): the timeline to zoom and hover
	Images   []indexImage
	Links    []string // the case's artifacts that are not images
}

type indexImage struct {
	Name string
	Src  template.URL // a data: URL, or the file's name when too large
}

var indexTemplate = template.Must(template.New("index").Funcs(template.FuncMap{"notes": RunNotes, "models": Models, "linkEvents": linkEvents}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>locklab {{.Kind}} {{.R.RunID}}</title>
<style>
body{font-family:sans-serif;margin:1.5em;max-width:1400px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}
tr.agrees td:first-child{background:#dfd}tr.contradicts td:first-child{background:#fcc}tr.undecided td:first-child{background:#eee}
.note{background:#ffd;padding:.5em}img{max-width:100%;border:1px solid #eee;margin:.3em 0}
h2{margin-top:1.5em;font-size:1.1em}
</style></head><body>
<h1>locklab {{.Kind}} {{.R.RunID}}</h1>
<p>Started {{.R.StartedAt.Format "2006-01-02 15:04:05 MST"}}{{if not .R.FinishedAt.IsZero}}, finished {{.R.FinishedAt.Format "15:04:05"}}{{end}};
{{.R.Host.CPUs}} CPUs, {{.R.Host.OS}}.{{range $k, $v := .R.Versions}} {{$k}} {{$v}};{{end}}</p>
{{if not .R.Complete}}<p class="note"><b>Incomplete</b>: {{.R.Note}}</p>{{end}}
<p><b>Verdict</b>: {{.R.Verdict.AsExpected}} case(s) as expected, {{.R.Verdict.Contradicted}} contradicting their expectation,
{{.R.Verdict.Undecided}} undecided; {{.R.Verdict.Violations}} violation(s) in all ({{.R.Verdict.DoubleGrants}} double grants),
{{.R.Verdict.NonLinearizable}} case(s) not linearizable.{{with models .R.Runs}} Judged under the model {{.}}.{{end}}</p>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr class="{{.Class}}"><td><a href="#{{.Run.Case}}">{{.Run.Case}}</a></td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p>Acquire latency counts waiting for the lock; hand-off is from a release to the grant to a client already waiting; fairness is Jain's index of the grants per client (1: even).</p>
{{range .Rows}}<h2 id="{{.Run.Case}}">{{.Run.Case}}</h2>
<p><b>{{.Run.Status}}</b>{{if .Run.Explanation}}: {{.Run.Explanation}}{{end}}</p>
{{if .Page}}<p><a href="{{.Page}}"><b>Timeline of {{.Run.Case}}</b>: zoom, pan, each violation with its events and history lines</a></p>{{end}}
{{$page := .Page}}{{with .Timeline}}<p>{{if $page}}<a href="{{$page}}">{{end}}<img src="{{.Src}}" alt="{{.Name}}" title="{{.Name}}">{{if $page}}</a>{{end}}</p>{{end}}
{{with notes .Run}}<ul>{{range .}}<li>{{linkEvents $page .}}</li>{{end}}</ul>{{end}}
{{if .Run.Faults}}<p>Faults: {{range .Run.Faults}}{{.Fault}} on {{.Target}} at {{printf "%.1f" .At}} s{{if .For}} for {{printf "%.1f" .For}} s{{end}}{{if .Error}} (failed: {{.Error}}){{end}}; {{end}}</p>{{end}}
{{if .Run.FirstError}}<p>First error: {{.Run.FirstError}}</p>{{end}}
{{range .Images}}<p><img src="{{.Src}}" alt="{{.Name}}" title="{{.Name}}"></p>{{end}}
{{if .Links}}<p>{{range .Links}}<a href="{{.}}">{{.}}</a> {{end}}</p>{{end}}
{{end}}
{{if .Plots}}<h2 id="plots">The whole run</h2>{{range .Plots}}<p><img src="{{.Src}}" alt="{{.Name}}" title="{{.Name}}"></p>{{end}}{{end}}
<h2>Files</h2><p>{{range .Files}}<a href="{{.}}">{{.}}</a><br>{{end}}</p>
</body></html>
`))

// WriteIndex writes index.html into dir: one self-contained page (plots
// embedded, no network) with the table, every plot, each case's verdict
// and explanation, and links to the files beside it.
func WriteIndex(dir, kind string, r *Results) error {
	d := indexData{Kind: kind, R: r, Files: r.Artifacts,
		Header: []string{"case", "approach", "clients", "acquires/s", "p50", "p99", "max", "hand-off p50", "hand-off p99",
			"fairness", "double grants", "other anomalies", "linearizable", "failed", "status"}}
	own := map[string]bool{}
	for _, run := range r.Runs {
		row := indexRow{Run: run, Class: statusClass(run.Status)}
		fairness := "-"
		if run.Fairness.Jain > 0 {
			fairness = fmt.Sprintf("%.2f", run.Fairness.Jain)
		}
		row.Cells = []string{run.Approach, fmt.Sprint(run.Clients), fmt.Sprintf("%.0f", run.AcquiresPerSec),
			FormatMicros(run.Acquire.P50), FormatMicros(run.Acquire.P99), FormatMicros(run.Acquire.Max),
			FormatMicros(run.HandOff.P50), FormatMicros(run.HandOff.P99), fairness,
			fmt.Sprint(run.DoubleGrants), fmt.Sprint(run.OtherAnomalies()), string(run.Linearizable),
			fmt.Sprint(run.Errors + run.Indeterminate), string(run.Status)}
		for _, a := range run.Artifacts {
			own[a] = true
			switch {
			case a == "timeline-"+run.Case+".png":
				img := image(dir, a)
				row.Timeline = &img
			case a == "timeline-"+run.Case+".html":
				row.Page = a
			case strings.HasSuffix(a, ".png"):
				row.Images = append(row.Images, image(dir, a))
			default:
				row.Links = append(row.Links, a)
			}
		}
		d.Rows = append(d.Rows, row)
	}
	for _, a := range r.Artifacts {
		if strings.HasSuffix(a, ".png") && !own[a] {
			d.Plots = append(d.Plots, image(dir, a))
		}
	}
	var b bytes.Buffer
	if err := indexTemplate.Execute(&b, d); err != nil {
		return fmt.Errorf("index.html: %w", err)
	}
	return WriteFileAtomic(filepath.Join(dir, "index.html"), b.Bytes())
}

var eventsInText = regexp.MustCompile(`\(events? ([0-9]+(?:, [0-9]+)*)\)`)

// linkEvents is text, escaped, with each event it names ("(events 296,
// 292)") linked to where the case's page shows it ("" page: not linked).
func linkEvents(page, text string) template.HTML {
	esc := template.HTMLEscapeString
	if page == "" {
		return template.HTML(esc(text))
	}
	var b strings.Builder
	last := 0
	for _, m := range eventsInText.FindAllStringSubmatchIndex(text, -1) {
		b.WriteString(esc(text[last:m[2]]))
		for i, n := range strings.Split(text[m[2]:m[3]], ", ") {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `<a href="%s#event=%s">%s</a>`, esc(page), n, n)
		}
		last = m[3]
	}
	b.WriteString(esc(text[last:]))
	return template.HTML(b.String())
}

func statusClass(s verdict.Status) string {
	switch s {
	case verdict.Agrees:
		return "agrees"
	case verdict.Contradicts:
		return "contradicts"
	case verdict.Undecided:
		return "undecided"
	}
	return ""
}

// image embeds the PNG name in dir, or links it when it is missing or
// too large to embed.
func image(dir, name string) indexImage {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || len(b) > maxInlineImage {
		return indexImage{Name: name, Src: template.URL(name)}
	}
	return indexImage{Name: name, Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))}
}

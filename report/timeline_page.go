package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
)

// TimelinePage is a case's page: its verdict first, then its interactive
// timeline (zoom, pan, hover), then its incidents.
type TimelinePage struct {
	Case        string
	Approach    string
	Clients     int
	Status      string
	Class       string // agrees, contradicts, undecided
	Explanation string
	Expected    []string
	Observed    []string
	Stalls      string   // StallLine
	Links       []string // files beside the page
	Data        TimelineData
}

// CasePage is the page of run with the timeline tl.
func CasePage(run Run, tl *Timeline, links []string) TimelinePage {
	return TimelinePage{Case: run.Case, Approach: run.Approach, Clients: run.Clients, Status: string(run.Status),
		Class: statusClass(run.Status), Explanation: run.Explanation, Expected: run.Expected, Observed: run.Observed,
		Stalls: StallLine(run), Links: links, Data: tl.Data()}
}

//go:embed timeline.js
var timelineJS string

//go:embed timeline.css
var timelineCSS string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"join": strings.Join}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Case}}: timeline</title>
<style>{{.CSS}}</style></head><body>
<h1>{{.Case}}</h1>
<p class="verdict {{.Class}}">{{if .Status}}<b>{{.Status}}</b>{{if .Explanation}}: {{.Explanation}}{{end}}{{else}}<b>{{.Approach}}</b>{{end}}</p>
<p class="sub">{{.Approach}}{{if .Clients}}, {{.Clients}} client(s){{end}}.{{if .Expected}} Expected {{join .Expected " + "}}.{{end}}{{if .Observed}} Observed {{join .Observed ", "}}.{{end}}{{if .Stalls}} {{.Stalls}}{{end}}</p>
<div id="tl"><div class="bar"><button data-z="in" title="zoom in (+)">+</button><button data-z="out" title="zoom out (-)">&minus;</button><button data-z="reset" title="the whole case (0)">whole case</button>
<span id="range"></span><span class="hint">wheel: zoom, drag: pan, double-click: zoom in there; hover a red marker for its violations, click to pin</span></div>
<svg id="svg" xmlns="http://www.w3.org/2000/svg"></svg><div id="tip" hidden></div></div>
<div class="legend"><span class="k hold"></span>holding the lock <span class="k past"></span>held past its believed lease <span class="k exp"></span>believed lease and its expiry
<span class="k dg"></span>both held (double grant) <span class="k cf"></span>a fault on that client <span class="k sf"></span>a fault on a server (every lane) <span class="k st"></span>the lab stalled</div>
<div id="incidents"></div>
<p class="files">{{range .Links}}<a href="{{.}}">{{.}}</a> {{end}}</p>
<script type="application/json" id="data">{{.JSON}}</script>
<script>{{.JS}}</script>
</body></html>
`))

// WriteTimelinePage writes the page to path: one self-contained file
// (its script and data inline, nothing fetched).
func WriteTimelinePage(path string, p TimelinePage) error {
	b, err := TimelinePageHTML(p)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b)
}

// TimelinePageHTML is the page's bytes.
func TimelinePageHTML(p TimelinePage) ([]byte, error) {
	data, err := json.Marshal(p.Data) // escapes <, > and &: nothing in it ends the script
	if err != nil {
		return nil, fmt.Errorf("timeline page %s: %w", p.Case, err)
	}
	var b bytes.Buffer
	err = pageTemplate.Execute(&b, struct {
		TimelinePage
		CSS  template.CSS
		JS   template.JS
		JSON template.JS
	}{p, template.CSS(timelineCSS), template.JS(timelineJS), template.JS(data)})
	if err != nil {
		return nil, fmt.Errorf("timeline page %s: %w", p.Case, err)
	}
	return b.Bytes(), nil
}

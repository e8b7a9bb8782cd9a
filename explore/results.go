package explore

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"

	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/verdict"
)

// Summary is what results.json says of an exploration (its "explore").
type Summary struct {
	Seed       uint64  `json:"seed"`
	Budget     float64 `json:"budget_s"`
	Elapsed    float64 `json:"elapsed_s"`
	Steer      bool    `json:"steer"`
	Runs       int     `json:"runs"`        // exploring runs
	ShrinkRuns int     `json:"shrink_runs"` // runs of shrink candidates
	// Stalled counts the exploring runs whose violations were not taken
	// as findings: the lab itself stalled during the events that show
	// them (see Result.Stalled).
	Stalled     int  `json:"stalled_runs"`
	Parallel    int  `json:"parallel"` // cases side by side
	Classes     int  `json:"classes"`  // distinct classes of violation (approach, class)
	Known       int  `json:"known"`    // findings a rule predicts
	New         int  `json:"new"`      // findings no rule predicts
	Interrupted bool `json:"interrupted,omitempty"`
	// StoppedEarly: the search ended once --stop-after-new new findings
	// were confirmed, before its budget ran out.
	StoppedEarly bool             `json:"stopped_early,omitempty"`
	Findings     []FindingSummary `json:"findings"`
	Approaches   []SearchSummary  `json:"approaches"`
}

// FindingSummary is one finding in results.json.
type FindingSummary struct {
	Approach string            `json:"approach"`
	Class    verdict.Outcome   `json:"class"`
	Known    bool              `json:"known"`
	Why      string            `json:"why"`
	Run      int               `json:"run"`
	After    float64           `json:"after_s"`
	Case     string            `json:"case"`
	Seen     int               `json:"seen_in_runs"`
	Unmasked bool              `json:"unmasked,omitempty"` // shown again without the faults a rule spoke for
	Proof    string            `json:"proof"`
	Also     []verdict.Outcome `json:"also,omitempty"`
	File     string            `json:"file"`
	// FinalCase is the last run of the final schedule that showed it.
	FinalCase string          `json:"final_case,omitempty"`
	Original  ScheduleSummary `json:"original"`
	Final     ScheduleSummary `json:"final"`
	Shrink    *ShrinkSummary  `json:"shrink,omitempty"`
}

// ScheduleSummary is a schedule in results.json.
type ScheduleSummary struct {
	Faults   int     `json:"faults"`
	Clients  int     `json:"clients"`
	Duration float64 `json:"duration_s"`
	Text     string  `json:"text"`
}

// ShrinkSummary is a finding's shrink in results.json.
type ShrinkSummary struct {
	Confirmed bool     `json:"confirmed"`
	Refuted   bool     `json:"refuted,omitempty"` // the schedule that found it did not show it in most runs again
	Runs      int      `json:"runs"`
	Steps     []string `json:"steps,omitempty"`
	Undone    []string `json:"undone,omitempty"` // steps taken back: their schedule showed it in too few measuring runs
	Hits      int      `json:"final_hits"`
	Tries     int      `json:"final_tries"`
	// The final schedule with no fault: shown in NoFaultHits of
	// NoFaultTries runs (0 of 0: not run).
	NoFaultHits  int    `json:"no_fault_hits"`
	NoFaultTries int    `json:"no_fault_tries"`
	Stopped      string `json:"stopped,omitempty"`
}

// SearchSummary is one approach's search in results.json.
type SearchSummary struct {
	Approach    string            `json:"approach"`
	Runs        int               `json:"runs"`
	Faults      []string          `json:"faults"` // the kinds it could take
	Transitions []TransitionCount `json:"transitions"`
}

// TransitionCount is one transition reached: by how many runs, first in
// which.
type TransitionCount struct {
	Transition string `json:"transition"`
	Runs       int    `json:"runs"`
	First      int    `json:"first_run"`
}

// Summarize is the result as results.json keeps it.
func (r *Result) Summarize(steer bool) Summary {
	s := Summary{Seed: r.Seed, Budget: r.Budget.Seconds(), Elapsed: r.Elapsed.Seconds(), Steer: steer, Runs: r.Runs,
		ShrinkRuns: r.ShrinkRuns, Stalled: r.Stalled, Parallel: r.Parallel, Classes: r.Classes(), New: r.New(), Interrupted: r.Interrupted,
		StoppedEarly: r.StoppedEarly, Findings: []FindingSummary{}}
	s.Known = len(r.Findings) - s.New
	for _, f := range r.Findings {
		fs := FindingSummary{Approach: f.Approach, Class: f.Class, Known: f.Known, Why: f.Why, Run: f.Run, After: f.After.Seconds(),
			Case: f.Case, Seen: f.Seen, Unmasked: f.Unmasked, Proof: f.Proof, Also: f.Also, File: f.File,
			Original: scheduleSummary(f.Original), Final: scheduleSummary(f.Schedule())}
		if sh := f.Shrunk; sh != nil {
			fs.FinalCase = sh.Last.Case
			fs.Shrink = &ShrinkSummary{Confirmed: sh.Confirmed, Refuted: sh.Refuted, Runs: sh.Runs, Steps: sh.Steps, Undone: sh.Undone, Hits: sh.Hits, Tries: sh.Tries, Stopped: sh.Stopped,
				NoFaultHits: sh.WithoutFaults.Hits, NoFaultTries: sh.WithoutFaults.Tries}
		}
		s.Findings = append(s.Findings, fs)
	}
	for _, a := range r.Approaches {
		ss := SearchSummary{Approach: a.Approach, Runs: a.Runs, Faults: a.Profile.Kinds(), Transitions: []TransitionCount{}}
		for _, t := range a.Coverage.Sorted() {
			ss.Transitions = append(ss.Transitions, TransitionCount{Transition: t, Runs: a.Coverage.Counts[t], First: a.Coverage.First[t]})
		}
		s.Approaches = append(s.Approaches, ss)
	}
	return s
}

// Classes counts the distinct classes of violation found: one per
// approach and class, however many findings (known and new) it has.
func (r *Result) Classes() int {
	return len(distinct(r.Findings, func(f *Finding) string { return f.Approach + " " + string(f.Class) }))
}

func scheduleSummary(s Schedule) ScheduleSummary {
	return ScheduleSummary{Faults: len(s.Faults), Clients: s.Workload.Clients, Duration: s.Duration.Seconds(), Text: s.Summary()}
}

// writeResults adds the exploration to results.json and writes its
// index.html over the runner's: the findings first, new ones on top, with
// their timelines, then the transitions covered, then every run.
func writeResults(r *Result, cfg Config) error {
	res := r.Outcome.Results
	sum := r.Summarize(cfg.Steer)
	res.Explore = sum
	for _, f := range r.Findings {
		res.Artifacts = append(res.Artifacts, f.File)
	}
	if err := report.WriteJSON(filepath.Join(r.Dir, "results.json"), res); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := indexTemplate.Execute(&b, indexData{R: r, S: sum, Res: res, Files: r.timelines(".png"), Pages: r.timelines(".html")}); err != nil {
		return fmt.Errorf("index.html: %w", err)
	}
	return report.WriteFileAtomic(filepath.Join(r.Dir, "index.html"), b.Bytes())
}

// timelines maps a case onto its timeline's file with the suffix ext
// (".png", the picture; ".html", its page), for the cases that drew one
// (those that showed a violation).
func (r *Result) timelines(ext string) map[string]string {
	out := map[string]string{}
	for _, run := range r.Outcome.Results.Runs {
		for _, a := range run.Artifacts {
			if strings.HasPrefix(a, "timeline-") && strings.HasSuffix(a, ext) {
				out[run.Case] = a
			}
		}
	}
	return out
}

type indexData struct {
	R     *Result
	S     Summary
	Res   *report.Results
	Files map[string]string // case -> its timeline's picture
	Pages map[string]string // case -> its timeline's page
}

var indexTemplate = template.Must(template.New("explore").Funcs(template.FuncMap{
	"timeline": func(files map[string]string, c string) string { return files[c] },
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>locklab explore {{.Res.RunID}}</title>
<style>
body{font-family:sans-serif;margin:1.5em;max-width:1400px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
.new{background:#fcc}.known{background:#eef}.note{background:#ffd;padding:.5em}img{max-width:100%;border:1px solid #eee;margin:.3em 0}
h2{margin-top:1.5em;font-size:1.1em}code{font-size:12px}
</style></head><body>
<h1>locklab explore {{.Res.RunID}}</h1>
{{if .S.Interrupted}}<p class="note"><b>Interrupted</b>: every finding so far is kept, shrunk or not.</p>{{end}}
{{if .S.StoppedEarly}}<p class="note"><b>Stopped early</b>: {{.S.New}} new finding(s) confirmed before the budget ran out (--stop-after-new).</p>{{end}}
<p>{{.S.Runs}} exploring runs and {{.S.ShrinkRuns}} shrink runs in {{printf "%.0f" .S.Elapsed}} s (budget {{printf "%.0f" .S.Budget}} s), seed {{.S.Seed}}{{if .S.Steer}}, steered{{end}}:
<b>{{.S.Classes}} distinct class(es) of violation; findings: {{.S.New}} new, {{.S.Known}} known</b>.</p>
{{if .S.Findings}}<table><tr><th>approach</th><th>class</th><th></th><th>found in run</th><th>seen in runs</th><th>shrunk</th><th>reproduced</th><th>file</th></tr>
{{range $i, $f := .S.Findings}}<tr class="{{if $f.Known}}known{{else}}new{{end}}"><td>{{$f.Approach}}</td><td><a href="#f{{$i}}">{{$f.Class}}</a></td><td>{{if $f.Known}}known{{else}}<b>NEW</b>{{end}}</td>
<td>{{$f.Run}} ({{printf "%.0f" $f.After}} s)</td><td>{{$f.Seen}}</td>
<td>{{if $f.Shrink}}{{if $f.Shrink.Confirmed}}{{$f.Original.Faults}} &rarr; {{$f.Final.Faults}} fault(s), {{printf "%.1f" $f.Original.Duration}} &rarr; {{printf "%.1f" $f.Final.Duration}} s in {{$f.Shrink.Runs}} runs{{else if $f.Shrink.Refuted}}not confirmed ({{$f.Shrink.Hits}}/{{$f.Shrink.Tries}}){{else}}not shrunk{{end}}{{else}}not shrunk{{end}}</td>
<td>{{if $f.Shrink}}{{$f.Shrink.Hits}}/{{$f.Shrink.Tries}}{{end}}</td><td><a href="{{$f.File}}">{{$f.File}}</a></td></tr>
{{end}}</table>{{else}}<p>No violation found.</p>{{end}}
{{range $i, $f := .S.Findings}}<h2 id="f{{$i}}">{{if $f.Known}}known{{else}}NEW{{end}}: {{$f.Approach}}, {{$f.Class}}</h2>
<p>{{$f.Why}}.</p>
<p>Found by run {{$f.Run}} ({{$f.Case}}): <code>{{$f.Original.Text}}</code></p>
<p>{{$f.Proof}}{{if $f.Also}} (also: {{range $f.Also}}{{.}} {{end}}){{end}}</p>
{{with timeline $.Files $f.Case}}<p><a href="{{timeline $.Pages $f.Case}}"><img src="{{.}}" alt="{{.}}"></a></p>{{end}}
{{if $f.Shrink}}{{if $f.Shrink.Confirmed}}<p>Shrunk in {{$f.Shrink.Runs}} runs to <code>{{$f.Final.Text}}</code>, shown in {{$f.Shrink.Hits}} of its {{$f.Shrink.Tries}} runs{{if $f.Shrink.Stopped}} (stopped: {{$f.Shrink.Stopped}}){{end}}:</p>
<ul>{{range $f.Shrink.Steps}}<li>{{.}}</li>{{end}}</ul>{{if $f.Shrink.Undone}}<p>Taken back, their schedule showing it in too few of its measuring runs:</p><ul>{{range $f.Shrink.Undone}}<li>{{.}}</li>{{end}}</ul>{{end}}{{if $f.Shrink.NoFaultHits}}<p>With no fault at all it showed too, in {{$f.Shrink.NoFaultHits}} of {{$f.Shrink.NoFaultTries}} runs: the lock's own race under this machine's load; the faults are not what makes it.</p>{{else if $f.Shrink.NoFaultTries}}<p>With no fault at all: shown in 0 of {{$f.Shrink.NoFaultTries}} runs.</p>{{end}}
{{with timeline $.Files $f.FinalCase}}<p><a href="{{timeline $.Pages $f.FinalCase}}"><img src="{{.}}" alt="{{.}}"></a></p>{{end}}{{else if $f.Shrink.Refuted}}<p>Not confirmed: shown again in {{$f.Shrink.Hits}} of {{$f.Shrink.Tries}} runs.</p>{{else}}<p>Not shrunk: the search ended first.</p>{{end}}{{end}}
{{end}}
{{range .S.Approaches}}<h2>{{.Approach}}: {{.Runs}} exploring runs, transitions reached</h2>
<p>Faults it could take: {{range .Faults}}{{.}} {{end}}</p>
<table><tr><th>transition</th><th>runs that reached it</th><th>first in run</th></tr>
{{range .Transitions}}<tr><td>{{.Transition}}</td><td>{{.Runs}}</td><td>{{.First}}</td></tr>{{end}}</table>
{{end}}
<h2>Every run</h2>
<table><tr><th>case</th><th>approach</th><th>acquired</th><th>observed</th><th>faults</th></tr>
{{range .Res.Runs}}<tr><td>{{with timeline $.Pages .Case}}<a href="{{.}}">{{end}}{{.Case}}{{with timeline $.Pages .Case}}</a>{{end}}</td><td>{{.Approach}}</td><td>{{.Acquired}}</td><td>{{range .Observed}}{{.}} {{end}}</td><td>{{range .Faults}}{{.Fault}} {{end}}</td></tr>
{{end}}</table>
<p><a href="results.json">results.json</a> <a href="history.jsonl.zst">history.jsonl.zst</a></p>
</body></html>
`))

// JUnit is one test case per finding: a new one fails (a CI fails on it),
// a known one passes; with no finding, one passing case says how much was
// searched.
func (r *Result) JUnit() ([]byte, error) {
	j := report.NewJUnit("locklab explore")
	for _, f := range r.Findings {
		class, name := "locklab.explore."+f.Approach, string(f.Class)
		if f.Known {
			j.Pass(class, name, 0)
			continue
		}
		j.Fail(class, name, 0, "new: "+f.Why, fmt.Sprintf("%s\nreproduce: locklab run %s", f.Proof, filepath.Join(r.Dir, f.File)))
	}
	if len(r.Findings) == 0 {
		j.Pass("locklab.explore", fmt.Sprintf("no violation in %d runs", r.Runs), r.Elapsed.Seconds())
	}
	return j.XML()
}

// WriteJUnit writes JUnit to path, whole or not at all.
func (r *Result) WriteJUnit(path string) error {
	b, err := r.JUnit()
	if err != nil {
		return err
	}
	return report.WriteFileAtomic(path, b)
}

// Print writes the exploration's summary for the terminal: the counts,
// then each finding (new first) with its file.
func (r *Result) Print(w io.Writer) error {
	ew := &bytes.Buffer{}
	fmt.Fprintf(ew, "explore: %d exploring runs, %d shrink runs in %v (%d side by side): %d distinct class(es) of violation; findings: %d new, %d known\n",
		r.Runs, r.ShrinkRuns, r.Elapsed.Round(1e9), r.Parallel, r.Classes(), r.New(), len(r.Findings)-r.New())
	if r.StoppedEarly {
		fmt.Fprintf(ew, "  stopped early: new findings confirmed with %v of the budget left\n", max(r.Budget-r.Elapsed, 0).Round(1e9))
	}
	if r.Stalled > 0 {
		fmt.Fprintf(ew, "  %d exploring run(s) showed a violation while the lab itself stalled: not taken as findings\n", r.Stalled)
	}
	for _, f := range r.Findings {
		status := "known"
		if !f.Known {
			status = "NEW"
		}
		fmt.Fprintf(ew, "  %-5s %s: %s (run %d, %v in; seen in %d runs)\n", status, f.Approach, f.Class, f.Run, f.After.Round(1e9), f.Seen)
		fmt.Fprintf(ew, "        %s\n", f.Why)
		switch sh := f.Shrunk; {
		case sh == nil || !sh.Confirmed && !sh.Refuted:
			fmt.Fprintf(ew, "        not shrunk (the search ended first): %s\n", f.Original.Summary())
		case sh.Refuted:
			fmt.Fprintf(ew, "        not confirmed: shown again in %d of %d runs\n", sh.Hits, sh.Tries)
		default:
			s := f.Schedule()
			fmt.Fprintf(ew, "        shrunk in %d runs: %d -> %d fault(s), %v -> %v; shown in %d of %d runs: %s\n",
				sh.Runs, len(f.Original.Faults), len(s.Faults), f.Original.Duration, s.Duration, sh.Hits, sh.Tries, s.Summary())
			for _, u := range sh.Undone {
				fmt.Fprintf(ew, "        taken back: %s\n", u)
			}
			if c := sh.WithoutFaults; c.Hits > 0 {
				fmt.Fprintf(ew, "        shown with no fault at all too, in %d of %d runs: the lock's own race under this machine's load; the faults are not what makes it\n", c.Hits, c.Tries)
			} else if c.Tries > 0 {
				fmt.Fprintf(ew, "        with no fault: shown in 0 of %d runs\n", c.Tries)
			}
		}
		fmt.Fprintf(ew, "        %s\n", filepath.Join(r.Dir, f.File))
	}
	for _, a := range r.Approaches {
		var ts []string
		for _, t := range a.Coverage.Sorted() {
			ts = append(ts, fmt.Sprintf("%s %d", t, a.Coverage.Counts[t]))
		}
		fmt.Fprintf(ew, "%s: %d runs reached %d transitions (rarest first, runs): %s\n", a.Approach, a.Runs, len(ts), strings.Join(ts, ", "))
	}
	_, err := w.Write(ew.Bytes())
	return err
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
)

// cmdMerge is `locklab merge DIR... --out DIR`: the shards' results folders
// of one plan folded into the folder an unsharded run of it writes, with
// its verdict and exit code.
func cmdMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge", stdout)
	out := fs.String("out", "", "the merged results folder to write (new, or empty)")
	junit := fs.String("junit", "", "also write JUnit XML to this file, as the unsharded command's --junit does")
	if code := parseFlags(fs, reorderFlags(fs, args), stdout, stderr); code >= 0 {
		return code
	}
	switch {
	case fs.NArg() == 0:
		fmt.Fprintln(stderr, "locklab merge: want the shards' results folders: locklab merge DIR... --out DIR")
		return exitUsage
	case *out == "":
		fmt.Fprintln(stderr, "locklab merge: --out DIR: where to write the merged folder")
		return exitUsage
	}
	ds := make([]shardDir, fs.NArg())
	for i, dir := range fs.Args() {
		var err error
		if ds[i], err = readShard(dir); err != nil {
			fmt.Fprintf(stderr, "locklab merge: %v\n", err)
			return exitUsage
		}
	}
	if err := checkShards(ds); err != nil {
		fmt.Fprintf(stderr, "locklab merge: %v\n", err)
		return exitUsage
	}
	runs, err := mergeRuns(ds)
	if err != nil {
		fmt.Fprintf(stderr, "locklab merge: %v\n", err)
		return exitUsage
	}
	for _, d := range ds {
		if within(*out, d.Dir) {
			fmt.Fprintf(stderr, "locklab merge: --out %s is inside the shard folder %s: want a folder of its own\n", *out, d.Dir)
			return exitUsage
		}
	}
	if err := newFolder(*out); err != nil {
		fmt.Fprintf(stderr, "locklab merge: --out %v\n", err)
		return exitUsage
	}
	res := mergeResults(ds, runs)
	fmt.Fprintf(stderr, "locklab merge: shards %s of %d of plan %s: %d runs\n", ints(mergedKs(ds)), ds[0].Rec.N, ds[0].Rec.Plan, len(runs))
	code, err := writeMergedKind(*out, ds, res, *junit, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "locklab merge: %v\n", err)
		return exitInfra
	}
	fmt.Fprintf(stdout, "results: %s\n", *out)
	return code
}

// writeMergedKind writes the merged folder as the plan's command would
// have, and returns the exit code its verdict calls for.
func writeMergedKind(out string, ds []shardDir, res *report.Results, junit string, stdout, stderr io.Writer) (int, error) {
	rec := ds[0].Rec
	var extra []string
	code := exitOK
	switch {
	case rec.Kind == "matrix" && rec.Matrix != nil:
		opt := runner.MatrixOptions{Runs: rec.Matrix.Runs, MinCatchRate: rec.Matrix.MinCatchRate}
		mat := runner.MatrixResults(rec.Matrix.Cells, res.Runs, opt)
		mat.Generated, mat.Command = time.Now().UTC(), unsharded(rec.Command)
		warn := func(err error) { fmt.Fprintf(stderr, "locklab merge: warning: %v\n", err) }
		if err := report.WriteMatrix(out, mat, junit, warn); err != nil {
			return exitInfra, err
		}
		extra = []string{"matrix.md", "matrix-compact.md", "matrix.json", "matrix.png", "matrix.html"}
		fmt.Fprintf(stdout, "%s\nmatrix: %s\n", report.MatrixMarkdown(mat), filepath.Join(out, "matrix.html"))
		code = matrixVerdict("merge", mat, res.Note, stderr)
	case rec.Kind == "run" || rec.Kind == "bench":
		report.PrintRuns(stdout, res.Runs)
		if rec.Repeats > 1 {
			code = exitForRepeats(res.Runs, resultsOf(res.Runs), rec.Need, stdout, stderr)
		} else {
			code = exitFor(resultsOf(res.Runs), stderr)
		}
		if junit != "" {
			b, err := report.RunsJUnit(rec.Kind, res.Runs, nil)
			if err == nil {
				err = report.WriteFileAtomic(junit, b)
			}
			if err != nil {
				return exitInfra, err
			}
		}
	case rec.Kind == "explore":
		sum, files, err := mergeExplore(out, ds)
		if err != nil {
			return exitInfra, err
		}
		res.Explore, extra = sum, files
		if code, err = exploreVerdict(out, sum, junit, stdout, stderr); err != nil {
			return code, err
		}
	default:
		return exitInfra, fmt.Errorf("%s: a shard of %q, which merge does not know", ds[0].Dir, rec.Kind)
	}
	extra = append(extra, plotsOverClients(out, res.Runs, stderr)...)
	return code, writeMerged(out, ds, res, extra)
}

// plotsOverClients draws the plots over client counts an unsharded run
// draws from its runs alone (throughput, latency against clients) and
// returns their names; a plot that cannot be drawn is a warning. Latency
// percentiles need each case's histogram: they stay in shard-K/.
func plotsOverClients(out string, runs []report.Run, stderr io.Writer) []string {
	counts := map[int]bool{}
	for _, r := range runs {
		counts[r.Clients] = true
	}
	if len(counts) < 2 {
		return nil
	}
	var names []string
	for name, draw := range map[string]func(string, []report.Run) error{
		"throughput.png": report.PlotThroughput, "latency-vs-clients.png": report.PlotLatencyVsClients} {
		if err := draw(filepath.Join(out, name), runs); err != nil {
			fmt.Fprintf(stderr, "locklab merge: warning: %v\n", err)
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// newFolder makes dir, which must be new or empty: a merge never mixes
// its files with another run's.
func newFolder(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%s: not empty (want a new folder for the merged results)", dir)
	}
	return nil
}

// shardDir is one shard's results folder as merge reads it.
type shardDir struct {
	Dir string
	Rec shardRecord
	Res *report.Results
}

// readShard reads a shard's folder: its shard.json and results.json.
func readShard(dir string) (shardDir, error) {
	d := shardDir{Dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, shardFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return d, fmt.Errorf("%s: no %s: not the results folder of a run with --shard K/N", dir, shardFileName)
	}
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d.Rec); err != nil {
		return d, fmt.Errorf("%s: %w", filepath.Join(dir, shardFileName), err)
	}
	if len(d.Rec.Merged) > 0 {
		return d, fmt.Errorf("%s: already merged (shards %s): merge the shards' own folders", dir, ints(d.Rec.Merged))
	}
	if d.Res, err = report.ReadResults(dir); err != nil {
		return d, err
	}
	return d, nil
}

// checkShards refuses folders that are not the N shards of one plan, each
// once, written by one locklab: the first problem, naming the folders.
func checkShards(ds []shardDir) error {
	if len(ds) == 0 {
		return errors.New("no shard folder given")
	}
	first := ds[0]
	byK := map[int]string{}
	for _, d := range ds {
		r, f := d.Rec, first.Rec
		switch {
		case r.Kind != f.Kind:
			return fmt.Errorf("%s is a shard of a %s, %s of a %s: shards of one plan only", d.Dir, r.Kind, first.Dir, f.Kind)
		case r.Plan != f.Plan:
			return fmt.Errorf("%s (shard %d/%d) is of plan %s, %s of plan %s: shards of one plan only (the same command, flags and locklab)",
				d.Dir, r.K, r.N, r.Plan, first.Dir, f.Plan)
		case r.N != f.N:
			return fmt.Errorf("%s is shard %d of %d, %s shard %d of %d: one N for every shard", d.Dir, r.K, r.N, first.Dir, f.K, f.N)
		case r.Version != f.Version:
			return fmt.Errorf("%s was written by locklab %q, %s by %q: one locklab for every shard", d.Dir, r.Version, first.Dir, f.Version)
		case r.K < 1 || r.K > r.N:
			return fmt.Errorf("%s: shard %d of %d", d.Dir, r.K, r.N)
		}
		if other, ok := byK[r.K]; ok {
			return fmt.Errorf("shard %d/%d given twice: %s and %s", r.K, r.N, other, d.Dir)
		}
		byK[r.K] = d.Dir
	}
	var missing []int
	for k := 1; k <= first.Rec.N; k++ {
		if _, ok := byK[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shard(s) %s of %d missing (given: %s)", ints(missing), first.Rec.N, ints(slices.Sorted(maps.Keys(byK))))
	}
	return nil
}

// mergeRuns is every shard's runs in the whole plan's order. A run that
// is not among its shard's cases, or cases that two shards claim, mean
// the folders do not hold one split: refused.
func mergeRuns(ds []shardDir) ([]report.Run, error) {
	if ds[0].Rec.Kind == "explore" {
		// An exploration's runs are its own: shard after shard, their
		// files where they stay, in shard-K/.
		sorted := slices.SortedFunc(slices.Values(ds), func(a, b shardDir) int { return a.Rec.K - b.Rec.K })
		var runs []report.Run
		for _, d := range sorted {
			for _, r := range d.Res.Runs {
				r.Artifacts = slices.Clone(r.Artifacts)
				for i, a := range r.Artifacts {
					r.Artifacts[i] = fmt.Sprintf("shard-%d/%s", d.Rec.K, a)
				}
				runs = append(runs, r)
			}
		}
		return runs, nil
	}
	at := map[string]int{}
	owner := map[string]string{}
	planCases := ds[0].Rec.PlanCases
	for _, d := range ds {
		if len(d.Rec.At) != len(d.Rec.Cases) {
			return nil, fmt.Errorf("%s: %s lists %d cases and %d places", d.Dir, shardFileName, len(d.Rec.Cases), len(d.Rec.At))
		}
		for i, c := range d.Rec.Cases {
			if o, ok := owner[c]; ok {
				return nil, fmt.Errorf("case %s falls to two shards: %s and %s", c, o, d.Dir)
			}
			owner[c], at[c] = d.Dir, d.Rec.At[i]
		}
	}
	if len(owner) != planCases {
		return nil, fmt.Errorf("the shards hold %d of the plan's %d cases", len(owner), planCases)
	}
	var runs []report.Run
	for _, d := range ds {
		for _, r := range d.Res.Runs {
			if owner[r.Case] != d.Dir {
				return nil, fmt.Errorf("%s: run %s is not one of this shard's cases", d.Dir, r.Case)
			}
			runs = append(runs, r)
		}
	}
	slices.SortStableFunc(runs, func(a, b report.Run) int { return at[a.Case] - at[b.Case] })
	return runs, nil
}

// mergeResults is results.json of the merged folder: the shards' runs in
// plan order and the verdict over all of them, complete when every shard
// was; its config says which shards it holds.
func mergeResults(ds []shardDir, runs []report.Run) *report.Results {
	f := ds[0].Res
	res := &report.Results{RunID: "merged-" + time.Now().UTC().Format("20060102-150405"), StartedAt: f.StartedAt, FinishedAt: f.FinishedAt,
		Complete: true, Versions: map[string]string{}, Host: f.Host, Servers: map[string][]string{}, Runs: runs,
		StallThreshold: f.StallThreshold, Verdict: report.Verdict{Safe: true}}
	var notes []string
	for _, d := range ds {
		r := d.Res
		if r.StartedAt.Before(res.StartedAt) {
			res.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(res.FinishedAt) {
			res.FinishedAt = r.FinishedAt
		}
		if !r.Complete {
			res.Complete = false
			notes = append(notes, fmt.Sprintf("shard %d/%d: %s", d.Rec.K, d.Rec.N, r.Note))
		}
		maps.Copy(res.Versions, r.Versions)
		for k, addrs := range r.Servers {
			res.Servers[k] = append(res.Servers[k], addrs...)
		}
	}
	res.Note = strings.Join(notes, "; ")
	config := map[string]any{}
	if m, ok := f.Config.(map[string]any); ok {
		maps.Copy(config, m)
	}
	config["shard"] = map[string]any{"plan": ds[0].Rec.Plan, "merged": mergedKs(ds), "of": ds[0].Rec.N}
	res.Config = config
	for _, r := range runs {
		v := &res.Verdict
		v.DoubleGrants += r.DoubleGrants
		v.Violations += r.ViolationCount
		if r.Linearizable == checker.LinNo {
			v.NonLinearizable++
		}
		v.Safe = v.Safe && r.Safe()
		switch r.Status {
		case verdict.Agrees:
			v.AsExpected++
		case verdict.Contradicts:
			v.Contradicted++
		case verdict.Undecided:
			v.Undecided++
		}
	}
	return res
}

// resultsOf is each run's verdict as its results keep it, for the gates
// of run and bench.
func resultsOf(runs []report.Run) []verdict.Result {
	vs := make([]verdict.Result, len(runs))
	for i, r := range runs {
		vs[i] = verdict.Result{Status: r.Status, Missed: r.Missed, Text: r.Case + ": " + r.Explanation}
		for _, o := range r.Expected {
			vs[i].Expected = append(vs[i].Expected, verdict.Outcome(o))
		}
	}
	return vs
}

func mergedKs(ds []shardDir) []int {
	ks := make([]int, len(ds))
	for i, d := range ds {
		ks[i] = d.Rec.K
	}
	slices.Sort(ks)
	return ks
}

// ints is a list of numbers as a sentence writes it: 1, 2, 4.
func ints(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// unsharded is a shard's command line without its --shard: the command an
// unsharded run of the plan takes.
func unsharded(command string) string {
	f := strings.Fields(command)
	var out []string
	for i := 0; i < len(f); i++ {
		switch {
		case f[i] == "--shard" || f[i] == "-shard":
			i++
		case strings.HasPrefix(f[i], "--shard=") || strings.HasPrefix(f[i], "-shard="):
		default:
			out = append(out, f[i])
		}
	}
	return strings.Join(out, " ")
}

// writeMerged writes the merged folder's files every kind has: each
// shard's folder under shard-K/, each run's files beside the merged ones
// (the tables link them), results.json, summary.md, index.html and
// shard.json, which names the shards it holds.
func writeMerged(out string, ds []shardDir, res *report.Results, extra []string) error {
	for _, d := range ds {
		sub := fmt.Sprintf("shard-%d", d.Rec.K)
		if err := linkTree(d.Dir, filepath.Join(out, sub)); err != nil {
			return err
		}
		res.Artifacts = append(res.Artifacts, sub+"/")
		if d.Rec.Kind == "explore" {
			continue // shards exploring one approach name their runs alike: their files stay in shard-K/
		}
		for _, r := range d.Res.Runs {
			for _, a := range r.Artifacts {
				if err := linkFile(filepath.Join(d.Dir, a), filepath.Join(out, a)); err != nil {
					return err
				}
			}
		}
	}
	res.Artifacts = append([]string{"index.html", "results.json", "summary.md", shardFileName}, append(extra, res.Artifacts...)...)
	for _, r := range res.Runs {
		res.Artifacts = append(res.Artifacts, r.Artifacts...)
	}
	rec := ds[0].Rec
	rec.K, rec.Cases, rec.At, rec.Merged = 0, nil, nil, mergedKs(ds)
	for _, d := range ds {
		rec.From = append(rec.From, d.Dir)
	}
	if err := report.WriteJSON(filepath.Join(out, shardFileName), rec); err != nil {
		return err
	}
	if err := runner.WriteSummary(filepath.Join(out, "summary.md"), rec.Title, res); err != nil {
		return err
	}
	if err := report.WriteIndex(out, rec.Title, res); err != nil {
		return err
	}
	return report.WriteJSON(filepath.Join(out, "results.json"), res)
}

// linkTree puts every file below src at the same place below dst: a hard
// link where the file system allows one (a merge of a large matrix's
// histories costs no copy), a copy where not.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		return linkFile(path, filepath.Join(dst, rel))
	})
}

func linkFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Link(src, dst); err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

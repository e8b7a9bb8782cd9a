package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/report"
)

// mergeExplore folds the shards' explorations into one summary: the
// counts summed, each approach's search kept, and one finding per approach
// and class (the best shrunk: confirmed, then fewest faults, then
// shortest), its found/ file put beside the merged results; every other
// shard's file stays in its shard-K/ folder. It returns the summary and
// the files it put.
func mergeExplore(out string, ds []shardDir) (explore.Summary, []string, error) {
	var m explore.Summary
	type found struct {
		f   explore.FindingSummary
		dir string
	}
	best := map[string]found{}
	var order []string
	for i, d := range ds {
		var s explore.Summary
		b, err := json.Marshal(d.Res.Explore)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil {
			return m, nil, fmt.Errorf("%s: results.json's exploration: %w", d.Dir, err)
		}
		if i == 0 {
			m = explore.Summary{Seed: s.Seed, Steer: s.Steer, Parallel: s.Parallel, Findings: []explore.FindingSummary{}}
		}
		m.Budget, m.Elapsed = max(m.Budget, s.Budget), max(m.Elapsed, s.Elapsed)
		m.Runs, m.ShrinkRuns, m.Stalled = m.Runs+s.Runs, m.ShrinkRuns+s.ShrinkRuns, m.Stalled+s.Stalled
		m.Interrupted = m.Interrupted || s.Interrupted
		m.Approaches = append(m.Approaches, s.Approaches...)
		for _, f := range s.Findings {
			key := f.Approach + " " + string(f.Class)
			prev, ok := best[key]
			if !ok {
				order = append(order, key)
			}
			if !ok || betterFinding(f, prev.f) {
				f.Seen += prev.f.Seen
				best[key] = found{f, d.Dir}
			} else {
				prev.f.Seen += f.Seen
				best[key] = prev
			}
		}
	}
	var files []string
	for _, key := range order {
		b := best[key]
		if b.f.File != "" {
			if err := linkFile(filepath.Join(b.dir, b.f.File), filepath.Join(out, b.f.File)); err != nil {
				return m, nil, err
			}
			files = append(files, b.f.File)
		}
		m.Findings = append(m.Findings, b.f)
		if b.f.Known {
			m.Known++
		} else {
			m.New++
		}
	}
	m.Classes = len(order)
	return m, files, nil
}

// betterFinding reports whether a is the better reproduction of a class
// than b: a confirmed shrink, then fewer faults, then a shorter schedule.
func betterFinding(a, b explore.FindingSummary) bool {
	confirmed := func(f explore.FindingSummary) int {
		if f.Shrink != nil && f.Shrink.Confirmed && !f.Shrink.Refuted {
			return 0
		}
		return 1
	}
	return cmp.Or(cmp.Compare(confirmed(a), confirmed(b)), cmp.Compare(a.Final.Faults, b.Final.Faults),
		cmp.Compare(a.Final.Duration, b.Final.Duration)) < 0
}

// exploreVerdict prints the merged exploration's findings, writes its
// JUnit file (one test case per finding, a new one failing) and returns
// the exit code: 1 when a class of violation is new.
func exploreVerdict(out string, s explore.Summary, junit string, stdout, stderr io.Writer) (int, error) {
	fmt.Fprintf(stdout, "%d runs (%d shrinking) in %d shards' searches: %d class(es) of violation, %d new\n",
		s.Runs, s.ShrinkRuns, len(s.Approaches), s.Classes, s.New)
	findings := slices.Clone(s.Findings)
	slices.SortStableFunc(findings, func(a, b explore.FindingSummary) int { return cmp.Compare(btoi(a.Known), btoi(b.Known)) })
	j := report.NewJUnit("locklab explore")
	for _, f := range findings {
		word := "known"
		class, name := "locklab.explore."+f.Approach, string(f.Class)
		if f.Known {
			j.Pass(class, name, 0)
		} else {
			word = "NEW"
			j.Fail(class, name, 0, "new: "+f.Why, fmt.Sprintf("%s\nreproduce: locklab run %s", f.Proof, filepath.Join(out, f.File)))
		}
		fmt.Fprintf(stdout, "  %s %s: %s (%s)\n", word, f.Approach, f.Class, f.File)
	}
	if len(findings) == 0 {
		j.Pass("locklab.explore", fmt.Sprintf("no violation in %d runs", s.Runs), 0)
	}
	if junit != "" {
		b, err := j.XML()
		if err == nil {
			err = report.WriteFileAtomic(junit, b)
		}
		if err != nil {
			return exitInfra, err
		}
	}
	if s.New > 0 {
		fmt.Fprintf(stderr, "locklab merge: %d new class(es) of violation\n", s.New)
		return exitUnsafe, nil
	}
	return exitOK, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

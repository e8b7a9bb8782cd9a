package explore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenario"
)

// foundName is the file name (without .yaml) of a finding: its approach
// and its class, and "known" for a class a rule predicts.
func foundName(f *Finding) string {
	name := f.Approach + "--" + fileSafe(f.Class)
	if f.Known {
		name += "--known"
	}
	return name
}

// scenario is the finding's scenario file: its smallest schedule so far,
// the outcome stated in expect:, and a comment saying what it shows, in
// words, with the events that prove it.
func (f *Finding) scenario(r *Result) []byte {
	s := f.Schedule()
	var c []string
	line := func(format string, args ...any) { c = append(c, fmt.Sprintf(format, args...)) }
	what := string(f.Class)
	if r, ok := f.Class.Row(); ok && r.Found != "" {
		what = r.Found
	}
	faults := "no fault"
	if len(s.Faults) > 0 {
		faults = strings.Join(s.Kinds(), " + ")
	}
	line("%s under %s: %s (%s).", f.Approach, faults, what, f.Class)
	if len(f.Also) > 0 {
		also := make([]string, len(f.Also))
		for i, a := range f.Also {
			also[i] = string(a)
		}
		line("The same run also showed: %s.", strings.Join(also, ", "))
	}
	c = append(c, "")
	status := "NEW"
	if f.Known {
		status = "known"
	}
	line("%s: %s.", status, f.Why)
	c = append(c, "")
	if f.Unmasked {
		line("Found by locklab explore (seed %d): run %d showed it under faults a rule predicts it for; without them it",
			r.Seed, f.Run)
		line("showed again (case %s, %s into the search), where no rule predicts it.", f.Case, f.After.Round(time.Second))
	} else {
		line("Found by locklab explore (seed %d) in run %d (case %s), %s into the search; %d exploring run(s) showed it.",
			r.Seed, f.Run, f.Case, f.After.Round(time.Second), f.Seen)
	}
	line("The events that prove it, in %s:", filepath.Join(r.Dir, history.FileName))
	proof, at := f.Proof, f.Case
	if f.Shrunk != nil && f.Shrunk.Last.Shown {
		proof, at = f.Shrunk.Last.Proof, f.Shrunk.Last.Case
	}
	line("  case %s: %s", at, proof)
	c = append(c, "")
	switch sh := f.Shrunk; {
	case sh == nil || !sh.Confirmed && !sh.Refuted:
		line("Not shrunk (the search ended first): this is the schedule that found it.")
	case sh.Refuted:
		line("Not shrunk: the schedule that found it showed it in %d of its %d runs, not in most of them.", sh.Hits, sh.Tries)
	case len(sh.Steps) == 0:
		line("Confirmed in %d runs (shown in %d of %d); no smaller schedule showed it in most of its runs.", sh.Runs, sh.Hits, sh.Tries)
		for _, u := range sh.Undone {
			line("  - taken back, its schedule showing it in too few of its measuring runs: %s", u)
		}
		if sh.Stopped != "" {
			line("(The shrink stopped early: %s.)", sh.Stopped)
		}
	default:
		o := f.Original
		line("Shrunk in %d runs from %d fault(s), %d clients, %v to %d fault(s), %d clients, %v; each step kept only if most of its runs (of %d) showed it:",
			sh.Runs, len(o.Faults), o.Workload.Clients, o.Duration, len(s.Faults), s.Workload.Clients, s.Duration, sh.RunsPer)
		for _, st := range sh.Steps {
			line("  - %s", st)
		}
		for _, u := range sh.Undone {
			line("  - taken back, its schedule showing it in too few of its measuring runs: %s", u)
		}
		if sh.Stopped != "" {
			line("(The shrink stopped early: %s.)", sh.Stopped)
		}
		line("This schedule showed it in %d of its %d runs here.", sh.Hits, sh.Tries)
	}
	if c := f.Shrunk; c != nil && c.WithoutFaults.Tries > 0 {
		if c.WithoutFaults.Hits > 0 {
			line("With no fault at all it showed too, in %d of %d runs beside it: the lock's own race under this machine's", c.WithoutFaults.Hits, c.WithoutFaults.Tries)
			line("load. The faults here are not what makes it, and this file replays only under a load like it.")
		} else {
			line("With no fault at all it showed in none of %d runs beside it: the faults make it.", c.WithoutFaults.Tries)
		}
	}
	line("locklab run on this file runs it again: exit 0 when it shows it again. The search ran its cases side by")
	line("side: a race may need that load to be won (locklab run --runs 5 --parallel %d runs it so).", max(2, r.Parallel))
	stated := f.Stated
	if stated == "" {
		stated = f.Class
	}
	d := s.Draft(foundName(f))
	d.Comment, d.Expect = c, []string{string(stated)}
	return scenario.Format(d)
}

func mkdirFor(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// writeFound writes finding f's scenario file, atomically.
func (e *explorer) writeFound(f *Finding) error {
	name := filepath.Join("found", foundName(f)+".yaml")
	if f.File != "" && f.File != name {
		// Judged again after its shrink: the file is renamed.
		if err := os.Remove(filepath.Join(e.res.Dir, f.File)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("results: %w", err)
		}
	}
	f.File = name
	return writeFileAtomic(filepath.Join(e.res.Dir, f.File), f.scenario(e.res))
}

// writeFileAtomic writes data through report's atomic writer, making the
// folder first.
func writeFileAtomic(path string, data []byte) error {
	if err := mkdirFor(path); err != nil {
		return err
	}
	return report.WriteFileAtomic(path, data)
}

package checker

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/history"
)

// FileOptions are what checking a history file takes (`locklab check`).
type FileOptions struct {
	Path   string
	Format string // jsonl, edn or jepsen-json; "" detects it
	// Model is a model's name, taken only when ModelGiven; otherwise the
	// format's default (ModelFor). A given empty name is an error.
	Model      string
	ModelGiven bool
	Linear     bool          // check linearizability too
	TimeLimit  time.Duration // for drawing a failing key; must be positive
	HTMLDir    string        // where to draw failing keys; "" draws none
	// Visit, when set, sees each event as it is read.
	Visit func(history.Event)
}

// Validate says whether the time limit is positive and a given model known.
func (o FileOptions) Validate() error {
	if o.TimeLimit <= 0 {
		return fmt.Errorf("--time-limit %v: must be positive", o.TimeLimit)
	}
	if o.ModelGiven {
		if _, err := ParseModel(o.Model); err != nil {
			return fmt.Errorf("--model: %w", err)
		}
	}
	return nil
}

// FileResult is a checked history file.
type FileResult struct {
	Verdict Verdict
	Loaded  history.Loaded
	Checker *Checker // holds the holders' intervals
	// VisualizationErr: drawing a failing key failed; the verdict stands.
	VisualizationErr error
}

// CheckFile reads and judges the history file o names. A history with no
// acquire or release is an error: a gate fed an empty or broken pipeline
// must not go green.
func CheckFile(ctx context.Context, o FileOptions) (FileResult, error) {
	if err := o.Validate(); err != nil {
		return FileResult{}, err
	}
	var r FileResult
	begin := func(format string) {
		model := ModelFor(format)
		if o.ModelGiven {
			model = Model(o.Model)
		}
		r.Checker = New(model, o.Linear)
	}
	var err error
	r.Loaded, err = history.Load(ctx, o.Path, o.Format, begin, func(ev history.Event) error {
		r.Checker.Add(ev)
		if o.Visit != nil {
			o.Visit(ev)
		}
		return nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return r, err
	}
	if r.Loaded.LockOps == 0 {
		return r, fmt.Errorf("no acquire or release operations in %s", o.Path)
	}
	r.Verdict, r.VisualizationErr = r.Checker.Verdict(ctx, Options{TimeLimit: o.TimeLimit, HTMLDir: o.HTMLDir})
	return r, nil
}

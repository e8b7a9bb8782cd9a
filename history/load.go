package history

import (
	"context"
	"fmt"
	"os"
)

// Loaded is what Load saw of a history besides its events.
type Loaded struct {
	Format  string  // the format read: jsonl, edn or jepsen-json
	LockOps int     // acquire and release events: none means nothing to judge
	Last    int64   // the latest event's time
	Nemesis []Event // every nemesis event, for fault windows
}

// Load reads the history file at path in format ("" detects it), checks
// each event follows from the ones before (Sequence), and hands each to fn.
// begin, when set, is told the format (as detected) before the first
// event: what judges the events may depend on it.
// Opening and reading run beside a watch on ctx: a FIFO with no writer
// blocks open(2), and a quiet pipe blocks read(2), where no check of ctx
// between events could see a Ctrl-C; on ctx's end Load returns ctx's
// error at once.
func Load(ctx context.Context, path, format string, begin func(format string), fn func(Event) error) (Loaded, error) {
	var l Loaded
	var seq Sequence
	read := make(chan error, 1)
	go func() {
		read <- readFile(path, format, func(f string) {
			l.Format = f
			if begin != nil {
				begin(f)
			}
		}, func(ev Event) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := seq.Check(ev); err != nil {
				return err
			}
			l.Last = max(l.Last, ev.T)
			switch ev.F {
			case Nemesis:
				l.Nemesis = append(l.Nemesis, ev)
			case Acquire, Release:
				l.LockOps++
			}
			return fn(ev)
		})
	}()
	select {
	case err := <-read:
		if ctx.Err() != nil {
			return Loaded{}, ctx.Err()
		}
		return l, err
	case <-ctx.Done():
		return Loaded{}, ctx.Err()
	}
}

func readFile(path, format string, begin func(string), fn func(Event) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := readFormat(f, format, begin, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

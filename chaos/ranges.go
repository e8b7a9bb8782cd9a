package chaos

import "time"

// Ranges say how a search (locklab explore) varies a fault: which values
// its options take and how long it lasts, in multiples of the time scale
// of the approach under test (its TTL, or its session timeout). Options
// are drawn first, in order, then the length.
type Ranges struct {
	Options []Choice
	// For is the fault's length; the zero Span: it is over when injected
	// (a crash, a restart).
	For Span
}

// Ranged is a fault that says how a search varies it (optional): one
// without it runs with its zero options for DefaultRanges' length.
type Ranged interface {
	Ranges() Ranges
}

// DefaultRanges are the ranges of a fault that gives none.
func DefaultRanges() Ranges { return Ranges{For: Span{0.2, 2}} }

// RangesOf are the ranges a search varies f in.
func RangesOf(f Fault) Ranges {
	if r, ok := f.(Ranged); ok {
		return r.Ranges()
	}
	return DefaultRanges()
}

// Span is a range of multiples of the time scale, [Lo, Hi).
type Span struct{ Lo, Hi float64 }

// Choice sets one option of a fault, or none: one of its Ways, drawn by
// weight (a single way is taken without a draw).
type Choice struct{ Ways []Way }

// Way is one way of a Choice: Option set to one of Values, or to a length
// drawn from Span, at least Min. No Option: the option is left unset.
type Way struct {
	Weight int
	Option string
	Values []string
	Span   Span
	Min    time.Duration
	// Back, when set, moves the length backwards (a clock set back) in
	// Back.In of Back.Of draws.
	Back *Back
}

// Back is how often a length is negative, and how long then: its own
// Span, or (the zero Span) the length drawn, negated.
type Back struct {
	In, Of int
	Span   Span
}

// Set is a Choice with one way: option always set, to a length drawn from
// span.
func Set(option string, span Span) Choice {
	return Choice{Ways: []Way{{Weight: 1, Option: option, Span: span}}}
}

package explore

import (
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/scenario"
)

// vary draws f's options and length from the ranges its fault gives
// (chaos.Ranged), scaled to T; a fault that gives none runs with its zero
// options (the probe checked they validate) for chaos.DefaultRanges. Only
// the fault's name is read: explore names no fault.
func vary(f *Fault, T time.Duration, rng *rand.Rand) {
	r := chaos.DefaultRanges()
	if c, err := chaos.New(f.Kind); err == nil {
		r = chaos.RangesOf(c)
	}
	scaled := func(s chaos.Span) time.Duration { return round(time.Duration(float64(T) * between(rng, s.Lo, s.Hi))) }
	f.Params = nil
	for _, c := range r.Options {
		if w := pickWay(c, rng); w.Option != "" {
			f.SetParam(w.Option, drawValue(w, scaled, rng))
		}
	}
	f.For = 0
	if r.For != (chaos.Span{}) {
		f.For = scaled(r.For)
	}
}

// pickWay draws one of c's ways by weight; a single way is taken without
// a draw.
func pickWay(c chaos.Choice, rng *rand.Rand) chaos.Way {
	if len(c.Ways) == 1 {
		return c.Ways[0]
	}
	total := 0
	for _, w := range c.Ways {
		total += w.Weight
	}
	x := rng.IntN(total)
	for _, w := range c.Ways {
		if x < w.Weight {
			return w
		}
		x -= w.Weight
	}
	return c.Ways[len(c.Ways)-1]
}

// drawValue draws way w's value: one of its values, or a length from its
// span (backwards, in Back's share of draws).
func drawValue(w chaos.Way, scaled func(chaos.Span) time.Duration, rng *rand.Rand) string {
	switch n := len(w.Values); {
	case n == 1:
		return w.Values[0]
	case n > 1:
		return w.Values[rng.IntN(n)]
	}
	d := max(scaled(w.Span), w.Min)
	if b := w.Back; b != nil && rng.IntN(b.Of) < b.In {
		if b.Span == (chaos.Span{}) {
			d = -d
		} else {
			d = -scaled(b.Span)
		}
	}
	return scenario.FormatDuration(d)
}

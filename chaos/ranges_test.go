package chaos

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// Every fault's ranges make sense, and every value they can give (each
// listed value, each end of a span on a one-second scale, forwards and
// backwards) is an option the fault accepts.
func TestRangesGiveOptionsTheFaultAccepts(t *testing.T) {
	for _, kind := range Kinds() {
		f, _ := New(kind)
		r := RangesOf(f)
		if r.For.Lo < 0 || r.For.Hi < r.For.Lo {
			t.Errorf("%s: length %v", kind, r.For)
		}
		for _, c := range r.Options {
			if len(c.Ways) == 0 {
				t.Errorf("%s: a choice with no way", kind)
			}
			for _, w := range c.Ways {
				if w.Weight <= 0 && len(c.Ways) > 1 {
					t.Errorf("%s: way %+v has weight %d", kind, w, w.Weight)
				}
				if w.Option == "" {
					continue
				}
				if !slices.Contains(Options(f), w.Option) {
					t.Errorf("%s: ranges name option %q; its options are %v", kind, w.Option, Options(f))
					continue
				}
				for _, v := range wayValues(w) {
					if _, err := Decode(kind, optionNode(w.Option, v)); err != nil {
						t.Errorf("%s: %s=%s, a value its ranges give, is refused: %v", kind, w.Option, v, err)
					}
				}
			}
		}
	}
}

// wayValues are the values w gives, at the ends of its spans on a
// one-second scale.
func wayValues(w Way) []string {
	if len(w.Values) > 0 {
		return w.Values
	}
	d := func(x float64) string { return max(time.Duration(x*float64(time.Second)), w.Min).String() }
	out := []string{d(w.Span.Lo), d(w.Span.Hi)}
	if b := w.Back; b != nil {
		back := b.Span
		if back == (Span{}) {
			back = w.Span // the length drawn, negated
		}
		out = append(out, "-"+d(back.Lo), "-"+d(back.Hi))
	}
	return out
}

func optionNode(name, value string) *yaml.Node {
	var n yaml.Node
	if err := yaml.Unmarshal(fmt.Appendf(nil, "%s: %s", name, value), &n); err != nil {
		panic(err)
	}
	return n.Content[0]
}

// A fault without ranges is varied in the default ones.
func TestRangesOfAFaultWithoutThem(t *testing.T) {
	if got := RangesOf(struct{ Fault }{}); got.For != DefaultRanges().For || len(got.Options) != 0 {
		t.Errorf("RangesOf(a fault without ranges) = %+v", got)
	}
}

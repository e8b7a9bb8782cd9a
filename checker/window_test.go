package checker

import "testing"

// How long the lab must have stood still to have made a double grant: the
// first holder's end past the second grant, however short the second
// holder's tenure.
func TestDoubleGrantWindowNeed(t *testing.T) {
	const ms = int64(1e6)
	iv := func(start, end, validUntil int64) Interval {
		return Interval{Start: start * ms, End: end * ms, ValidUntil: validUntil * ms}
	}
	for _, tt := range []struct {
		name string
		d    DoubleGrant
		need int64 // ms
	}{
		{"outlived, a short second tenure inside a 3 s pause",
			DoubleGrant{Kind: OutlivedLease, Held: iv(1000, 4100, 2000), Second: iv(2050, 2090, 3050)}, 2050},
		{"outlived, the second holds on past the first",
			DoubleGrant{Kind: OutlivedLease, Held: iv(1000, 2300, 2000), Second: iv(2050, 2600, 3050)}, 250},
		{"both valid, the first's belief past the second grant",
			DoubleGrant{Kind: BothValid, Held: iv(1000, 1500, 2000), Second: iv(1200, 1240, 2200)}, 800},
		{"never released: no bound",
			DoubleGrant{Kind: NeverReleased, Held: Interval{Start: 1000 * ms, End: Open}, Second: iv(1200, 1240, 0)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.d.window()
			if w.Need != tt.need*ms {
				t.Errorf("need %v ms, want %v ms", w.Need/ms, tt.need)
			}
			if w.From != tt.d.Held.Start && tt.d.Kind != BothValid {
				t.Errorf("from %d, want the first grant %d", w.From, tt.d.Held.Start)
			}
		})
	}
}

package verdict

import (
	"strings"
	"testing"
)

// observed is a checked case that saw kinds.
func observed(kinds ...Outcome) Observed {
	o := Observed{Counts: map[Outcome]int{}, Checked: true}
	for _, k := range kinds {
		o.Counts[k]++
	}
	return o
}

func TestNotInjected(t *testing.T) {
	const why = "nobody held k0 within 2s"
	obs := func(_ bool, kinds ...Outcome) Observed { return observed(kinds...) }
	for _, tt := range []struct {
		name   string
		e      Expectation
		obs    Observed
		status Status
	}{
		{"expected violation missed", Expect("", DoubleGrantOutlived), obs(true), Undecided},
		{"expected violation showed anyway", Expect("", DoubleGrantOutlived), obs(true, DoubleGrantOutlived), Agrees},
		{"expected safe, nothing unsafe", Expect("", Safe), obs(true), Agrees},
		{"expected safe and blocked, never blocked", Expect("", Safe, Blocked), obs(true), Undecided},
		{"expected safe, a double grant anyway", Expect("", Safe), obs(true, DoubleGrantBothValid), Contradicts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NotInjected(Compare(tt.e, tt.obs), why)
			if r.Status != tt.status {
				t.Errorf("status %s, want %s (%s)", r.Status, tt.status, r.Text)
			}
			if said := strings.Contains(r.Text, why); said != (tt.status == Undecided || tt.name == "expected safe, nothing unsafe") {
				t.Errorf("%s: the text says why the fault never took effect: %v (%q)", r.Status, said, r.Text)
			}
			if tt.status == Undecided && (r.Missed || !strings.Contains(r.Text, why)) {
				t.Errorf("undecided, but missed %v, text %q", r.Missed, r.Text)
			}
		})
	}
}

func TestNoGrantAfterFault(t *testing.T) {
	obs := observed
	for _, tt := range []struct {
		name   string
		e      Expectation
		obs    Observed
		status Status
	}{
		{"an expected double grant missed", Expect("", DoubleGrantOutlived, LostUpdate), obs(), Undecided},
		{"shown anyway", Expect("", DoubleGrantOutlived), obs(DoubleGrantOutlived), Agrees},
		{"expected safe, clean", Expect("", Safe), obs(), Agrees},
		{"expected safe, a double grant", Expect("", Safe), obs(DoubleGrantBothValid), Contradicts},
		{"expected blocked, not seen", Expect("", Safe, Blocked), obs(), Contradicts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := NoGrantAfterFault(Compare(tt.e, tt.obs)); r.Status != tt.status {
				t.Errorf("status %s, want %s (%s)", r.Status, tt.status, r.Text)
			}
		})
	}
}

func TestServersUnrecovered(t *testing.T) {
	const why = "redis-0: connection refused"
	obs := func(kinds ...Outcome) Observed { return observed(append(kinds, Unrecovered)...) }
	mayUnrecovered := Expect("", Safe)
	mayUnrecovered.May = []Outcome{Unrecovered}
	forbidden := Expect("", Safe)
	forbidden.Forbidden = []Outcome{Unrecovered}
	for _, tt := range []struct {
		name   string
		e      Expectation
		obs    Observed
		status Status
		says   bool // the text names the servers' failure
	}{
		{"expected safe, clean", Expect("", Safe), obs(), Agrees, true},
		{"expected violation shown", Expect("", DoubleGrantOutlived), obs(DoubleGrantOutlived), Agrees, true},
		{"expected violation missed", Expect("", DoubleGrantOutlived), obs(), Undecided, true},
		{"expected safe, a double grant", Expect("", Safe), obs(DoubleGrantBothValid), Contradicts, false},
		{"the expectation allows it", mayUnrecovered, obs(), Agrees, false},
		{"the expectation names it", Expect("", Safe, Unrecovered), obs(), Agrees, false},
		{"the expectation forbids it", forbidden, obs(), Contradicts, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ServersUnrecovered(Compare(tt.e, tt.obs), tt.e, why)
			if r.Status != tt.status {
				t.Errorf("status %s, want %s (%s)", r.Status, tt.status, r.Text)
			}
			if said := strings.Contains(r.Text, why); said != tt.says {
				t.Errorf("the text names the servers' failure: %v, want %v (%q)", said, tt.says, r.Text)
			}
			if r.Status == Undecided && r.Missed {
				t.Errorf("undecided but still missed: %q", r.Text)
			}
		})
	}
}

package verdict

import (
	"strings"
	"testing"
	"time"
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

func TestLapsedUntaken(t *testing.T) {
	const s = int64(time.Second)
	// client-clock-jump--redis-redlock--r5 beside two busy loops: client 1
	// granted at 1.63 s, its clock jumped at the grant, its release at
	// 3.24 s answered "not held" (3.28 s); client 0 granted only at 3.34 s.
	holder := Tenure{Key: "k0", Proc: 1, Start: 1630 * s / 1000, End: 3240 * s / 1000, Learned: 3280 * s / 1000}
	next := Tenure{Key: "k0", Proc: 0, Start: 3340 * s / 1000, End: 4300 * s / 1000}
	struck := []Span{{Start: 1630 * s / 1000, End: 1640 * s / 1000}}
	during := next
	during.Start = 3 * s
	otherKey := during
	otherKey.Key = "k1"
	notTold := holder
	notTold.Learned = 0
	for _, tt := range []struct {
		name   string
		holds  []Tenure
		struck []Span
		want   bool
	}{
		{"lapsed, nobody granted before the hold ended", []Tenure{holder, next}, struck, true},
		{"another client granted while it held", []Tenure{holder, during}, struck, false},
		{"granted another key meanwhile", []Tenure{holder, otherKey, next}, struck, true},
		{"the holder never told the lock was gone", []Tenure{notTold, next}, struck, false},
		{"no fault aimed at a hold", []Tenure{holder, next}, nil, false},
		{"the fault struck another hold", []Tenure{holder, next}, []Span{{Start: 4 * s, End: 4 * s}}, false},
		{"the fault struck at the hold's end", []Tenure{holder, next}, []Span{{Start: holder.End, End: holder.End}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := LapsedUntaken(tt.holds, tt.struck); got != tt.want {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}

func TestUntaken(t *testing.T) {
	obs := observed
	h := Tenure{Key: "k0", Proc: 1, Start: 1, End: 2, Learned: 3}
	for _, tt := range []struct {
		name   string
		e      Expectation
		obs    Observed
		status Status
	}{
		{"an expected double grant missed", Expect("", DoubleGrantBothValid), obs(), Undecided},
		{"a double grant and its lost update missed", Expect("", DoubleGrantOutlived, LostUpdate), obs(), Undecided},
		{"shown anyway", Expect("", DoubleGrantBothValid), obs(DoubleGrantBothValid), Agrees},
		{"expected safe, clean", Expect("", Safe), obs(), Agrees},
		{"expected safe, a double grant", Expect("", Safe), obs(DoubleGrantOutlived), Contradicts},
		{"a refused stale write missed", Expect("", DoubleGrantOutlived, StaleWriteRefused), obs(DoubleGrantOutlived), Contradicts},
		{"expected blocked, not seen", Expect("", Safe, Blocked), obs(), Contradicts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := Untaken(Compare(tt.e, tt.obs), h, 0); r.Status != tt.status {
				t.Errorf("status %s, want %s (%s)", r.Status, tt.status, r.Text)
			}
		})
	}
}

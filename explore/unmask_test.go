package explore

import (
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/verdict"
)

// A known class is queued to run again without the faults whose rules
// predicted it, once per set of faults left, at most maxUnmask times for
// each set of faults that explained it, and never with no fault left.
func TestUnmaskingIsQueuedOnce(t *testing.T) {
	e := &explorer{tried: map[string]int{}}
	srch := &Search{Approach: "a"}
	clock := Fault{Kind: "server-clock", Params: []Param{{Name: "offset", Value: "3s"}}, At: time.Second, For: time.Second}
	pause := Fault{Kind: "client-pause", Target: chaos.Selector{Client: chaos.ClientRandom}, At: 2 * time.Second, For: time.Second}
	kill := Fault{Kind: "server-kill", At: 2 * time.Second, For: time.Second}
	s := Schedule{Approach: "a", Duration: 5 * time.Second, Faults: []Fault{clock, pause}}
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, s, []string{"server-clock"}, 1)
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, s, []string{"server-clock"}, 2) // the same again
	if len(e.unmasks) != 1 || len(e.unmasks[0].s.Faults) != 1 || e.unmasks[0].s.Faults[0].Kind != "client-pause" || e.unmasks[0].run != 1 {
		t.Fatalf("queued %+v", e.unmasks)
	}
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, Schedule{Faults: []Fault{clock}}, []string{"server-clock"}, 3)
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, s, nil, 4) // the hazard of every lease: nothing to drop
	if len(e.unmasks) != 1 {
		t.Fatalf("queued with nothing left, or nothing to drop: %d", len(e.unmasks))
	}
	// server-kill speaks as server-restart.
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, Schedule{Faults: []Fault{kill, pause}}, []string{"server-restart"}, 5)
	if len(e.unmasks) != 2 || e.unmasks[1].s.Faults[0].Kind != "client-pause" {
		t.Fatalf("server-kill not dropped for a server-restart rule: %+v", e.unmasks)
	}
	for i := range 5 {
		p := pause
		p.At = time.Duration(i+3) * time.Second
		e.queueUnmask(srch, verdict.DoubleGrantBothValid, Schedule{Faults: []Fault{clock, p}}, []string{"server-clock"}, 6+i)
	}
	byClock := 0
	for _, u := range e.unmasks {
		if u.run != 5 { // the server-restart one
			byClock++
		}
	}
	if byClock != maxUnmask {
		t.Errorf("%d unmaskings of one class explained by the server clock, want at most %d", byClock, maxUnmask)
	}
	// Another explanation has a budget of its own: the server-clock runs
	// did not spend that of a run a client clock fault seemed to explain.
	skew := Fault{Kind: "client-clock", Params: []Param{{Name: "offset", Value: "-3s"}}, Target: chaos.Selector{Client: chaos.ClientRandom}, At: time.Second, For: time.Second}
	e.queueUnmask(srch, verdict.DoubleGrantBothValid, Schedule{Faults: []Fault{skew, pause}}, []string{"client-clock"}, 11)
	if last := e.unmasks[len(e.unmasks)-1]; len(e.unmasks) != maxUnmask+2 || last.run != 11 {
		t.Errorf("a run explained by another fault was not unmasked once the server clock's budget was spent: %+v", e.unmasks)
	}
}

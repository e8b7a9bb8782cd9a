package runner

import (
	"reflect"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/verdict"
	"github.com/locklab/locklab/workload"
)

// The faults aimed at a hold must meet it from their start to when they
// took effect: an instant one (a restart) until it was over, a lasting one
// (a clock jump left in place) until it was in place; a fault not aimed at
// a hold is judged by its window alone.
func TestDecisiveAtHoldSpans(t *testing.T) {
	s := func(sec float64) int64 { return int64(sec * float64(time.Second)) }
	r := &caseRun{
		env:   &caseEnv{},
		c:     Case{Approach: impls.Approach{Caps: impls.Capabilities{TTL: true}}, Workload: workload.Spec{TTL: 10 * time.Second}},
		rec:   &checkingRecorder{check: checker.New(checker.ModelLease, true)},
		first: 0, last: s(12),
		windows: []report.Window{
			{Start: s(1), End: s(2.5), Instant: true, AtGrant: true, InPlace: s(2.5), Label: "server-restart"},
			{Start: s(3), End: s(12), Open: true, AtGrant: true, InPlace: s(9.5), Label: "server-clock"},
			{Start: s(4), End: s(5), InPlace: s(4.1), Label: "partition"},
			{Start: s(6), End: s(7), AtGrant: true, InPlace: s(6.01), Label: "drop-replies"},
		},
	}
	d := r.decisive()
	want := []verdict.Span{{Start: s(1), End: s(2.5)}, {Start: s(3), End: s(9.5)}}
	if !reflect.DeepEqual(d.AtHold, want) {
		t.Errorf("AtHold = %v, want %v", d.AtHold, want)
	}
	// The one on the holder's links meets its release.
	if want := []verdict.Span{{Start: s(6), End: s(6.01)}}; !reflect.DeepEqual(d.AtRelease, want) {
		t.Errorf("AtRelease = %v, want %v", d.AtRelease, want)
	}
	if d.Settle != int64(stall.DefaultThreshold) {
		t.Errorf("Settle = %v, want the default stall threshold", time.Duration(d.Settle))
	}
	if len(d.Instant) != 1 || len(d.Faults) != 3 {
		t.Errorf("instant %v, faults %v: want the restart instant, the jump and the partition as windows", d.Instant, d.Faults)
	}
}

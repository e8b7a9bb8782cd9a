package explore

import (
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
)

// sightingsOf are the classes a case showed: the checker's, blocked
// where a key stayed stuck well past when it should have been free
// (verdict.Starvation, the judgement locklab run makes of the same case),
// and unrecovered where the servers failed their health check after the
// faults (a finding about the servers; the runner started new ones).
func sightingsOf(res runner.CaseResult, f verdict.Freeing) []Sighting {
	ss := sightings(res.Check, res.Events)
	var s verdict.Starvation
	for _, ev := range res.Events {
		s.Add(ev)
	}
	if proof, ok := s.Starved(f); ok {
		ss = append(ss, Sighting{Class: verdict.Blocked, Count: 1, Proof: proof, Stated: verdict.Blocked})
	}
	if why := res.Run.Unrecovered; why != "" {
		ss = append(ss, Sighting{Class: verdict.Unrecovered, Count: 1, Proof: "servers did not recover after the faults: " + why, Stated: verdict.Unrecovered})
	}
	return ss
}

package explore

import (
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/verdict"
)

// sightingsOf are the classes a case showed: the checker's, and blocked
// where a key stayed stuck well past when it should have been free
// (verdict.Starvation, the judgement locklab run makes of the same case).
func sightingsOf(res runner.CaseResult, f verdict.Freeing) []Sighting {
	ss := sightings(res.Check, res.Events)
	var s verdict.Starvation
	for _, ev := range res.Events {
		s.Add(ev)
	}
	if proof, ok := s.Starved(f); ok {
		ss = append(ss, Sighting{Class: verdict.Blocked, Count: 1, Proof: proof, Stated: verdict.Blocked})
	}
	return ss
}

package explore

import (
	"math/rand/v2"
	"sort"
)

// Coverage counts the runs that reached each transition, and remembers
// which run reached it first.
type Coverage struct {
	Counts map[string]int
	First  map[string]int // transition -> the number of the first run that reached it
}

// NewCoverage is an empty coverage.
func NewCoverage() *Coverage { return &Coverage{Counts: map[string]int{}, First: map[string]int{}} }

// rareBelow: a transition reached by fewer runs than this is rare; a run
// that reaches one is kept to be mutated.
const rareBelow = 3

// Add counts run number run's transitions; it reports whether one of
// them was rare before it.
func (c *Coverage) Add(run int, trans []string) (rare bool) {
	for _, t := range trans {
		if c.Counts[t] < rareBelow {
			rare = true
		}
		if _, ok := c.First[t]; !ok {
			c.First[t] = run
		}
		c.Counts[t]++
	}
	return rare
}

// weight is how much a schedule that reached trans is worth mutating: the
// rarer its transitions, the more (each counts 1/runs that reached it).
func (c *Coverage) weight(trans []string) float64 {
	w := 0.0
	for _, t := range trans {
		w += 1 / float64(max(c.Counts[t], 1))
	}
	return w
}

// Sorted is the transitions reached, rarest first (then by name).
func (c *Coverage) Sorted() []string {
	out := make([]string, 0, len(c.Counts))
	for t := range c.Counts {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if c.Counts[out[i]] != c.Counts[out[j]] {
			return c.Counts[out[i]] < c.Counts[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// Searcher picks one approach's next schedule: a fresh one (Generate) or,
// when steering, one time in three a mutation of a schedule that reached a
// rare transition (the fresh ones keep every kind of fault coming up). Its choices are seeded: the same seed and the same feedback
// give the same sequence of schedules.
type Searcher struct {
	p       Profile
	seed    uint64
	steer   bool
	rng     *rand.Rand
	fresh   int
	mutants int
	corpus  []kept
	cov     *Coverage
}

type kept struct {
	s     Schedule
	trans []string
}

// maxCorpus bounds the schedules kept for mutation; the least worth
// (by weight) goes first.
const maxCorpus = 64

// NewSearcher searches p from seed; steer=false rolls dice only.
func NewSearcher(p Profile, seed uint64, steer bool, cov *Coverage) *Searcher {
	return &Searcher{p: p, seed: seed, steer: steer, rng: rand.New(rand.NewPCG(seed, 0x5eed)), cov: cov}
}

// Origin says where a schedule came from.
type Origin struct {
	Fresh  int // its number among fresh schedules; -1 for a mutant
	Mutant int // its number among mutants; -1 for a fresh one
}

// Next is the next schedule to run.
func (s *Searcher) Next() (Schedule, Origin) {
	if s.steer && len(s.corpus) > 0 && s.rng.IntN(3) == 0 {
		parent := s.pick()
		j := s.mutants
		s.mutants++
		return Mutate(s.p, parent.s, s.seed, j), Origin{Fresh: -1, Mutant: j}
	}
	i := s.fresh
	s.fresh++
	return Generate(s.p, s.seed, i), Origin{Fresh: i, Mutant: -1}
}

// pick draws a kept schedule, each as likely as its weight.
func (s *Searcher) pick() kept {
	total := 0.0
	for _, k := range s.corpus {
		total += s.cov.weight(k.trans)
	}
	x := s.rng.Float64() * total
	for _, k := range s.corpus {
		if x -= s.cov.weight(k.trans); x < 0 {
			return k
		}
	}
	return s.corpus[len(s.corpus)-1]
}

// Feedback tells the searcher what run number run of schedule sched
// reached; the coverage counts it, and a schedule that reached a rare
// transition is kept for mutation.
func (s *Searcher) Feedback(run int, sched Schedule, trans []string) {
	if !s.cov.Add(run, trans) || !s.steer {
		return
	}
	s.corpus = append(s.corpus, kept{s: sched, trans: trans})
	if len(s.corpus) > maxCorpus {
		worst := 0
		for i, k := range s.corpus {
			if s.cov.weight(k.trans) < s.cov.weight(s.corpus[worst].trans) {
				worst = i
			}
		}
		s.corpus = append(s.corpus[:worst], s.corpus[worst+1:]...)
	}
}

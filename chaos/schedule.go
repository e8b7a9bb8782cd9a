package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// Step is one entry of a scenario's faults: what, where, when and for how
// long. When is one of:
//
//	at: 3s                      once, 3s into the run (the default: at 0)
//	every: 6s  (at: first)      periodically; the first at `at`, else at `every`
//	random: {mean: 5s}          at random, exponential gaps of that mean, from `at`
//	when: {holding: k0}         once, as soon as some client holds k0 (not before `at`)
//	when: {holding: k0, after: 1s}  once, 1s after some client was found holding k0
//	when: {renewed: k0}         once, as soon as k0's holder has renewed its lease since its grant
//	when: {releasing: k0}       once, as the next release of k0 is asked (a release of a re-entry does not count)
//
// jitter (with at or every) moves each time by a uniform amount in
// [-jitter, +jitter]. for is how long each injection lasts before its heal;
// without it the fault stays until the engine heals everything at the end
// (instantaneous faults, crashes, have no heal and ignore it).
type Step struct {
	Fault  Fault    `yaml:"-"` // decoded by the scenario loader (see Decode)
	Target Selector `yaml:"target"`
	At     Duration `yaml:"at"`
	Every  Duration `yaml:"every"`
	Jitter Duration `yaml:"jitter"`
	Random *Random  `yaml:"random"`
	When   *When    `yaml:"when"`
	For    Duration `yaml:"for"`
}

// Random spaces a step's injections as a Poisson process.
type Random struct {
	Mean Duration `yaml:"mean"`
}

// When makes a step event-driven: it fires once, when the condition holds.
type When struct {
	Holding string `yaml:"holding"` // some client holds this key
	// Renewed: the holder of this key has renewed its lease since its
	// grant (its own extend or its watchdog's, answered ok): a fault
	// placed past a renewal, where renewal bugs live.
	Renewed string `yaml:"renewed"`
	// Releasing: the holder of this key asks for its release (the next
	// one from when the step is due): a fault placed as a release is on
	// its way, where release bugs live (a late reply, a retry).
	Releasing string `yaml:"releasing"`
	// After: this long past the moment a holder was found. A fault aimed at
	// what the other clients do while one holds (a waiter's timeout) keeps
	// its distance from the grant however late the grant came; `at` counts
	// from the start of the run.
	After Duration `yaml:"after"`
}

func (w When) String() string {
	s := "holding " + w.Holding
	switch {
	case w.Renewed != "":
		s = "renewed " + w.Renewed
	case w.Releasing != "":
		s = "releasing " + w.Releasing
	}
	if w.After > 0 {
		s += ", after " + time.Duration(w.After).String()
	}
	return s
}

// Key is the key the condition is about.
func (w When) Key() string { return w.Holding + w.Renewed + w.Releasing }

// Planned is one injection in a compiled plan.
type Planned struct {
	Step   int           // index of the step it came from
	At     time.Duration // from the start of the run
	When   *When         // non-nil: wait for this after At, then inject (a trigger)
	For    time.Duration // heal this long after injecting; 0: at the end
	Fault  Fault
	Target Selector
	// Seed is for the resolver's random choices (one node, a random
	// client), so a run's seed fixes which targets are hit as well as when.
	Seed uint64
}

// maxPlanned bounds a plan: a typo such as `every: 1ms` over an hour should
// be an error, not millions of injections.
const maxPlanned = 100_000

// Validate checks a step on its own, before a run.
func (s Step) Validate() error {
	if s.Fault == nil {
		return errors.New("step has no fault")
	}
	if err := s.Fault.Validate(); err != nil {
		return err
	}
	if err := s.Target.Validate(); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"at", s.At}, {"every", s.Every}, {"jitter", s.Jitter}, {"for", s.For}} {
		if d.v < 0 {
			return fmt.Errorf("%s %v: must not be negative", d.name, d.v)
		}
	}
	kinds := 0
	if s.Every > 0 {
		kinds++
	}
	if s.Random != nil {
		kinds++
		if s.Random.Mean <= 0 {
			return errors.New("random: mean must be positive, like 5s")
		}
	}
	if s.When != nil {
		kinds++
		given := 0
		for _, k := range []string{s.When.Holding, s.When.Renewed, s.When.Releasing} {
			if k != "" {
				given++
			}
		}
		if given != 1 {
			return errors.New("when: give one of holding: KEY, renewed: KEY and releasing: KEY")
		}
		if s.When.After < 0 {
			return errors.New("when: after must not be negative")
		}
	}
	if kinds > 1 {
		return errors.New("give one of every, random and when")
	}
	if s.Jitter > 0 && (s.Random != nil || s.When != nil) {
		return errors.New("jitter goes with at or every")
	}
	return nil
}

// Compile turns steps into a plan for a run of duration, sorted by time:
// pure and deterministic, so the same seed gives the same timeline (and the
// same target choices). Each step draws from its own random stream, so
// adding a step does not move the others. Event-driven steps come back as
// triggers (Planned.When set) for the engine.
func Compile(steps []Step, seed uint64, duration time.Duration) ([]Planned, error) {
	if duration <= 0 {
		return nil, fmt.Errorf("duration %v: must be positive", duration)
	}
	var plan []Planned
	for i, s := range steps {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("step %d (%s): %w", i+1, kindOf(s.Fault), err)
		}
		if s.At.D() >= duration {
			return nil, fmt.Errorf("step %d (%s): at %v is not within the run's %v", i+1, s.Fault.Kind(), s.At, duration)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		add := func(at time.Duration, when *When) error {
			if at < 0 || at >= duration {
				return nil // jittered out of the run
			}
			if len(plan) >= maxPlanned {
				return fmt.Errorf("step %d (%s): more than %d injections; is the period too short?", i+1, s.Fault.Kind(), maxPlanned)
			}
			plan = append(plan, Planned{Step: i, At: at, When: when, For: s.For.D(), Fault: s.Fault,
				Target: s.Target, Seed: rng.Uint64()})
			return nil
		}
		jitter := func(t time.Duration) time.Duration {
			if s.Jitter <= 0 {
				return t
			}
			return t + time.Duration(rng.Int64N(2*int64(s.Jitter)+1)) - s.Jitter.D()
		}
		var err error
		switch {
		case s.When != nil:
			w := *s.When
			err = add(s.At.D(), &w)
		case s.Random != nil:
			for t := s.At.D(); err == nil; {
				t += time.Duration(rng.ExpFloat64() * float64(s.Random.Mean))
				if t >= duration {
					break
				}
				err = add(t, nil)
			}
		case s.Every > 0:
			first := s.At.D()
			if first == 0 {
				first = s.Every.D()
			}
			for t := first; t < duration && err == nil; t += s.Every.D() {
				err = add(max(jitter(t), 0), nil)
			}
		default:
			err = add(max(jitter(s.At.D()), 0), nil)
		}
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(plan, func(a, b int) bool { return plan[a].At < plan[b].At })
	return plan, nil
}

func kindOf(f Fault) string {
	if f == nil {
		return "no fault"
	}
	return f.Kind()
}

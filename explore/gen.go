package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/scenario"
	"github.com/locklab/locklab/workload"
)

// Profile is what the generator knows of an approach: plain data, so a
// schedule is a pure function of the profile, the seed and its number.
type Profile struct {
	Approach string
	Server   string
	// ServerNodes is how many nodes of its server kind the lab runs; Nodes
	// how many of them the approach uses (0: all).
	ServerNodes, Nodes int
	TTL                bool // its leases expire (capability ttl)
	Renewal, Fencing   bool
	// Reentrant: a holder may acquire again (capability reentrant), so
	// workloads may re-enter.
	Reentrant bool
	// Watchdog: the approach renews its leases on its own (capability
	// watchdog), so a fault may wait for a renewal without the workload's.
	Watchdog bool
	// Session is how long after a holder goes silent its lock comes free
	// when a session (ZooKeeper, an etcd lease) decides it: the time scale
	// of approaches without a TTL.
	Session time.Duration
	// Options are the faults and target shapes the approach can take, as
	// the runner checked them (see probe.go); the generator picks among
	// them only.
	Options []Option
}

// Option is one fault kind on one shape of target.
type Option struct {
	Kind   string
	Target chaos.Selector
}

// Bounds the generator keeps to; the unit tests hold it to them.
const (
	minFaults, maxFaults = 1, 4
	minClients           = 2
	maxClients           = 5
	// edge keeps faults off the first and last half second of a run: the
	// clients start, and the last ones finish, on a whole lab.
	edge = 500 * time.Millisecond
	// grain rounds generated times, so scenario files read well.
	grain = 10 * time.Millisecond
	// maxFor bounds a fault's length, in multiples of the time scale.
	maxFor = 3
	// A run lasts 2.5 to 4 times the scale, within these bounds (and
	// longer where its faults end late: recovery): long enough for a lease
	// to run out and be granted again after a fault, short enough for a
	// search to run many.
	minDuration, maxDuration = 3 * time.Second, 8 * time.Second
)

// Scale is the time scale of a schedule for approach p: its TTL for
// approaches whose leases expire, else its session timeout, else a second.
// Fault lengths, times and holds are drawn as multiples of it.
func (p Profile) Scale(w workload.Spec) time.Duration {
	switch {
	case p.TTL && w.TTL > 0:
		return w.TTL
	case p.Session > 0:
		return p.Session
	}
	return time.Second
}

// Generate is schedule number i of seed for p: the same three give the
// same schedule, and schedule i does not depend on any other.
func Generate(p Profile, seed uint64, i int) Schedule {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	s := Schedule{Approach: p.Approach, Seed: rng.Uint64() >> 1}
	s.Workload = genWorkload(p, rng)
	T := p.Scale(s.Workload)
	s.Duration = round(min(max(time.Duration(float64(T)*between(rng, 2.5, 4)), minDuration), maxDuration))
	if len(p.Options) == 0 {
		return s
	}
	n := pickCount(rng)
	overlap := rng.IntN(2) == 0
	// The first fault's kind takes turns over the kinds (from a place the
	// seed picks): every kind comes up within as many schedules as there
	// are kinds, however the dice fall for the others.
	kinds := p.Kinds()
	turn := kinds[(i+int(seed%uint64(len(kinds))))%len(kinds)]
	for k := range n {
		kind := ""
		if k == 0 {
			kind = turn
		}
		f, ok := genFault(p, s.Workload, kind, T, s.Duration, rng)
		if !ok {
			continue
		}
		if k := len(s.Faults); k > 0 {
			prev := s.Faults[k-1]
			if overlap {
				f.At = prev.At + time.Duration(rng.Int64N(int64(max(prev.For, grain))))
			} else {
				f.At = prev.End() + time.Duration(float64(T)*between(rng, 0, 1))
			}
			f.At = round(f.At)
		}
		if fit(&f, s.Duration) {
			s.Faults = append(s.Faults, f)
		}
	}
	if len(s.Faults) == 0 {
		// Every draw fell outside the run: one fault at its start still
		// makes the schedule a search.
		if f, ok := genFault(p, s.Workload, turn, T, s.Duration, rng); ok {
			f.At = edge
			if fit(&f, s.Duration) {
				s.Faults = append(s.Faults, f)
			}
		}
	}
	recovery(p, &s)
	return s
}

// recovery lengthens s so that it runs on past its last fault by the time
// the approach takes to free a lock whose holder is gone (its TTL, else
// its session), plus one and a half time scales (starved's margin and
// window): a lock that should have come free is seen not to, as Jepsen's
// final phase after the heal does.
func recovery(p Profile, s *Schedule) {
	freed := p.Session
	if p.TTL && s.Workload.TTL > 0 {
		freed = s.Workload.TTL
	}
	var end time.Duration
	for _, f := range s.Faults {
		end = max(end, f.End())
	}
	if end > 0 {
		s.Duration = max(s.Duration, round(end+freed+p.Scale(s.Workload)*3/2))
	}
}

// pickCount draws how many faults a schedule has: fewer more often.
func pickCount(rng *rand.Rand) int {
	switch x := rng.Float64(); {
	case x < 0.4:
		return 1
	case x < 0.7:
		return 2
	case x < 0.9:
		return 3
	}
	return maxFaults
}

// genWorkload draws a workload. Without care or renewal, a hold stays
// within a fifth of the lease, so a holder outlives its lease only when a
// fault makes it; a careful holder (honour-lease) may hold up to one and a
// half leases, since it stops when its lease runs out by its own clock;
// one that renews, up to one lease.
func genWorkload(p Profile, rng *rand.Rand) workload.Spec {
	w := workload.Spec{Kind: workload.Mutex, Clients: minClients + rng.IntN(maxClients-minClients+1), Keys: 1}
	if rng.IntN(2) == 0 {
		w.Kind = workload.Counter
	}
	if rng.IntN(5) == 0 {
		w.Keys = 2
	}
	switch {
	case p.TTL && rng.IntN(5) == 0:
		w.TTL = 2 * time.Second
	case p.TTL:
		w.TTL = time.Second
	default:
		// A lease that only a session bounds (an etcd lease) lasts the
		// session's time, in whole seconds as etcd counts them.
		w.TTL = max(p.Session.Round(time.Second), time.Second)
	}
	w.Fenced = w.Kind == workload.Counter && p.Fencing && rng.IntN(2) == 0
	switch x := rng.IntN(10); {
	case p.TTL && x < 3:
		w.HonourLease = true
	case p.Renewal && x < 5:
		w.Renew = true
	}
	w.Hold = genHold(p, w, rng)
	T := p.Scale(w)
	w.AcquireTimeout = round(min(max(3*T, 2*time.Second), 6*time.Second))
	if rng.IntN(2) == 0 {
		w.Think = genThink(w, rng)
	}
	if p.Reentrant && rng.IntN(2) == 0 {
		// Drawn only for a re-entrant lock: the others' schedules of a
		// seed stay as they were.
		w.Reentry = genReentry(rng)
	}
	return w
}

// genReentry draws the share of holds that re-enter.
func genReentry(rng *rand.Rand) float64 { return []float64{0.25, 0.5, 1}[rng.IntN(3)] }

// genThink draws a think time: a short pause after each release, so the
// key goes to a waiting client instead of back to the one that let go (in
// a closed loop it rarely changes hands: one client kept a memory lock for
// 268 of 270 grants in a test). It stays short beside the holds, from 5 ms
// to a tenth of the lease (at least 20 ms).
func genThink(w workload.Spec, rng *rand.Rand) workload.Dist {
	hi := max(round(w.TTL/10), 20*time.Millisecond)
	lo := time.Duration(5+rng.IntN(int(hi/time.Millisecond)-4)) * time.Millisecond
	return workload.Dist{Kind: "uniform", A: min(lo, hi), B: hi}
}

// genHold draws the hold distribution for w (see genWorkload).
func genHold(p Profile, w workload.Spec, rng *rand.Rand) workload.Dist {
	T := p.Scale(w)
	switch {
	case w.HonourLease:
		return workload.Dist{Kind: "uniform", A: round(T / 2), B: round(T * 3 / 2)}
	case w.Renew:
		return workload.Dist{Kind: "uniform", A: round(T / 2), B: round(T)}
	}
	lo := time.Duration(5+rng.IntN(26)) * time.Millisecond
	hi := lo + time.Duration(rng.Int64N(int64(max(T/5-lo, time.Millisecond))))
	return workload.Dist{Kind: "uniform", A: lo, B: max(round(hi), lo)}
}

// genFault draws one fault of kind (any kind when ""): an option, its
// options and its length, at a time in the first half of the run, and now
// and then a placement where bugs live: a fault on the holder once it
// holds (three times in ten) or once it renewed (two in ten, where leases
// are renewed in w), a fault on the servers as a release goes out (two in
// ten), a fault on a waiter as the holder's release goes out (three in
// ten: the hand-over, where a waiter's attempt first succeeds). A fault on
// links waits for a release more often (a node's five in ten, a waiter's
// seven): a reply lost, late or cut matters most on the release and the
// attempt that finds the key free, and a client blocked on an earlier
// request's lost reply never sends that attempt.
func genFault(p Profile, w workload.Spec, kind string, T, duration time.Duration, rng *rand.Rand) (Fault, bool) {
	if len(p.Options) == 0 {
		return Fault{}, false
	}
	// Kinds first, then a shape: a kind with many shapes (a link fault)
	// is not drawn more often than one with a single shape.
	if kind == "" {
		kinds := p.Kinds()
		kind = kinds[rng.IntN(len(kinds))]
	}
	var shapes []Option
	for _, o := range p.Options {
		if o.Kind == kind {
			shapes = append(shapes, o)
		}
	}
	o := shapes[rng.IntN(len(shapes))]
	f := Fault{Kind: o.Kind, Target: o.Target}
	f.Target.Nodes = slices.Clone(o.Target.Nodes)
	vary(&f, T, rng)
	f.At = round(edge + time.Duration(rng.Int64N(int64(max(duration/2-edge, grain)))))
	switch x := rng.IntN(10); {
	case f.Target.Client == chaos.ClientHolder && x < 3:
		f.When = f.Target.Key
	case f.Target.Client == chaos.ClientHolder && x < 5 && renews(p, w):
		f.When, f.On = f.Target.Key, scenario.OnRenewed
	case f.Target.Client == "" && (x < 2 || (x < 5 && onLinks(f.Kind))):
		f.When, f.On = "0", scenario.OnReleasing
	case f.Target.Client == chaos.ClientWaiter && (x < 3 || (x < 7 && onLinks(f.Kind))):
		f.When, f.On = f.Target.Key, scenario.OnReleasing
	}
	return f, true
}

// onLinks reports whether faults of kind act on network links.
func onLinks(kind string) bool {
	f, err := chaos.New(kind)
	return err == nil && chaos.NeedsOf(f).Links
}

// atRelease reports whether a fault on t may wait for a release: one on
// the servers, or on a waiter of the key being let go.
func atRelease(t chaos.Selector) bool { return t.Client == "" || t.Client == chaos.ClientWaiter }

// renews reports whether holders of w renew their leases: the workload's
// own renewals, or the approach's watchdog.
func renews(p Profile, w workload.Spec) bool {
	return p.Watchdog || (w.Renew && p.Renewal && p.TTL)
}

// fit makes f end half a second before the run does, shortening it if it
// must; false when it cannot start in time.
func fit(f *Fault, duration time.Duration) bool {
	last := duration - edge
	if f.At < edge {
		f.At = edge
	}
	if f.At >= last {
		return false
	}
	if f.End() > last {
		f.For = round(last - f.At)
		if f.For <= 0 {
			f.For = grain
		}
	}
	return true
}

// Mutate derives a schedule from parent for steering: a new seed and one
// or two changes (a fault moved, lengthened or shortened, retargeted,
// added or dropped; a workload setting changed). It is pure: mutation j of
// a parent under seed is always the same.
func Mutate(p Profile, parent Schedule, seed uint64, j int) Schedule {
	rng := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(j)))
	s := parent.Clone()
	s.Seed = rng.Uint64() >> 1
	// The parent's recovery is laid again after the faults move.
	s.Duration = min(s.Duration, maxDuration)
	T := p.Scale(s.Workload)
	for range 1 + rng.IntN(2) {
		mutateOnce(p, &s, T, rng)
		T = p.Scale(s.Workload)
	}
	for i := 0; i < len(s.Faults); {
		// Lengths stay on the scale of the lease, which a change of TTL
		// may have moved.
		s.Faults[i].For = min(s.Faults[i].For, round(maxFor*T))
		if s.Faults[i].On == scenario.OnRenewed && !renews(p, s.Workload) {
			s.Faults[i].On = "" // nobody renews now: it waits for a holder
		}
		if !fit(&s.Faults[i], s.Duration) {
			s.Faults = slices.Delete(s.Faults, i, i+1)
			continue
		}
		i++
	}
	if len(s.Faults) == 0 {
		if f, ok := genFault(p, s.Workload, "", T, s.Duration, rng); ok && fit(&f, s.Duration) {
			s.Faults = append(s.Faults, f)
		}
	}
	recovery(p, &s)
	return s
}

func mutateOnce(p Profile, s *Schedule, T time.Duration, rng *rand.Rand) {
	n := len(s.Faults)
	pickFault := func() *Fault { return &s.Faults[rng.IntN(n)] }
	switch op := rng.IntN(9); {
	case op == 0 && n > 0: // move
		f := pickFault()
		f.At = round(max(edge, f.At+time.Duration(float64(T)*between(rng, -1, 1))))
		f.When, f.On = "", ""
	case op == 1 && n > 0: // lengthen or shorten
		f := pickFault()
		if f.For > 0 {
			f.For = round(max(grain, time.Duration(float64(f.For)*between(rng, 0.5, 2))))
		}
	case op == 2 && n > 0: // another target of the same kind
		f := pickFault()
		var shapes []Option
		for _, o := range p.Options {
			if o.Kind == f.Kind {
				shapes = append(shapes, o)
			}
		}
		if len(shapes) > 0 {
			f.Target = shapes[rng.IntN(len(shapes))].Target
			f.Target.Nodes = slices.Clone(f.Target.Nodes)
			if releasing := f.On == scenario.OnReleasing; (releasing && !atRelease(f.Target)) || (!releasing && f.Target.Client != chaos.ClientHolder) {
				f.When, f.On = "", ""
			}
		}
	case op == 3 && n > 0: // other options
		f := pickFault()
		at, when, on := f.At, f.When, f.On
		vary(f, T, rng)
		f.At, f.When, f.On = at, when, on
	case op == 4 && n < maxFaults: // one more
		if f, ok := genFault(p, s.Workload, "", T, s.Duration, rng); ok {
			s.Faults = append(s.Faults, f)
		}
	case op == 5 && n > minFaults: // one fewer
		i := rng.IntN(n)
		s.Faults = slices.Delete(s.Faults, i, i+1)
	case op == 6: // the run's length
		s.Duration = round(min(max(time.Duration(float64(s.Duration)*between(rng, 0.7, 1.4)), minDuration), maxDuration))
	default: // the workload
		mutateWorkload(p, &s.Workload, rng)
	}
}

func mutateWorkload(p Profile, w *workload.Spec, rng *rand.Rand) {
	settings := 8
	if p.Reentrant {
		settings++ // the re-entry: only a re-entrant lock's draws change
	}
	switch rng.IntN(settings) {
	case 0:
		w.Clients = min(max(w.Clients+[]int{-1, 1}[rng.IntN(2)], minClients), maxClients)
	case 1:
		w.Keys = 3 - w.Keys // 1 <-> 2
	case 2:
		if w.Kind == workload.Mutex {
			w.Kind = workload.Counter
		} else {
			w.Kind, w.Fenced = workload.Mutex, false
		}
	case 3:
		if p.TTL {
			w.TTL = 3*time.Second - w.TTL // 1s <-> 2s
		}
	case 4:
		w.HonourLease = p.TTL && !w.HonourLease
		w.Renew = w.Renew && !w.HonourLease
	case 5:
		w.Renew = p.Renewal && !w.Renew
		w.HonourLease = w.HonourLease && !w.Renew
	case 6:
		w.Fenced = w.Kind == workload.Counter && p.Fencing && !w.Fenced
	case 7:
		if w.Think.A > 0 || w.Think.B > 0 {
			w.Think = workload.Dist{}
		} else {
			w.Think = genThink(*w, rng)
		}
	case 8:
		if w.Reentry > 0 {
			w.Reentry = 0
		} else {
			w.Reentry = genReentry(rng)
		}
	}
	w.Hold = genHold(p, *w, rng)
	w.AcquireTimeout = round(min(max(3*p.Scale(*w), 2*time.Second), 6*time.Second))
	if w.Think.B > max(round(w.TTL/10), 20*time.Millisecond) {
		w.Think = genThink(*w, rng) // a shorter lease: a shorter pause
	}
}

// between draws uniformly from [lo, hi).
func between(rng *rand.Rand, lo, hi float64) float64 { return lo + rng.Float64()*(hi-lo) }

// round rounds d to the generator's grain.
func round(d time.Duration) time.Duration { return d.Round(grain) }

// String names an option as a scenario writes it.
func (o Option) String() string { return fmt.Sprintf("%s on %s", o.Kind, o.Target) }

// Package checker judges histories. It knows nothing of any server: a
// history file alone is enough to reach a verdict.
package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/history"
)

// Open marks an interval whose holder never released (crashed or still held
// when the history ended): it extends to the end of time.
const Open = math.MaxInt64

// Interval is one holder's tenure: [acquire ok, release invoke], the
// release being the one that ended it under the model (see Model).
type Interval struct {
	Key        string
	Proc       int
	Start, End int64 // CLOCK_MONOTONIC ns; End == Open if never released
	// Asked is when the acquire that granted it was sent (0: unknown).
	Asked      int64
	StartIndex int64 // index of the acquire ok event
	EndIndex   int64 // index of the release invoke event, -1 if open
	// ValidUntil is the holder's latest belief about its lease expiry
	// (monotonic ns): as recorded at the grant, updated by renewals and by
	// the belief it recorded when it let go. 0 = none. What it believed
	// before a renewal is in Fate.Earlier (believedAt).
	ValidUntil int64
	Token      *uint64
	// Learned is when the holder was told the lock was no longer its own
	// (its release or extend answered "not held", or a Lost signal): the
	// lock was taken away, not given back. 0 = never told.
	Learned int64
	// Fate is what else befell the tenure, which few do: nil, nothing.
	// (Kept apart, a long run's millions of tenures stay small.)
	Fate *Fate
}

// Fate is what befell a tenure besides its grant and its release.
type Fate struct {
	// Signal is when the lock itself told the holder, while it held, that
	// the lock was gone: a Lost signal or an extend answered "not held"
	// (0: never); SignalIndex is that event. SignalLease is the lease end
	// the holder believed in just before (0: none known).
	Signal, SignalIndex, SignalLease int64
	// Lost is when the lock's own loss signal (a Lost event) first told
	// the holder (0: never), which an extend answered "not held" is not.
	Lost int64
	// Failed is the first release of this tenure that failed: under the
	// lease model the one that ended it, under the mutex model one that
	// never happened (the tenure went on). nil: none failed.
	Failed *FailedRelease
	// Crashed is when the holder's process crashed holding the lock
	// (CrashIndex its event); 0: it did not.
	Crashed, CrashIndex int64
	// Regranted (mutex model) is when the holder was first granted the
	// lock again while it held it; 0: never.
	Regranted int64
	// RenewedOver is this tenure's first extend answered ok while another
	// process had held the key since before the extend was sent: the lock
	// renewed a lease that was no longer the holder's. nil: none.
	RenewedOver *Overlap
	// ReleasedOver is the first release by another process answered ok
	// while this tenure had held the key since before it was sent: a
	// release that may have removed this holder's lock. nil: none.
	ReleasedOver *Overlap
	// Earlier are the lease ends the holder believed in before its
	// latest, each with when the extend that replaced it was sent. nil:
	// no extend moved it.
	Earlier []Belief
}

// Belief is a lease end a holder believed in until an extend sent at
// Replaced moved it.
type Belief struct{ Until, Replaced int64 }

// Overlap is a call by another process answered ok on a key a tenure
// held: by whom, when it was sent, its events.
type Overlap struct {
	Proc                     int
	Invoke                   int64
	InvokeIndex, AnswerIndex int64
}

// The mechanisms a double grant's history shows beyond its class, as
// rules and findings name them.
const (
	// RenewedOverAnother: the first holder's extend, sent after the second
	// was granted, was answered ok: the lock renews a lease without
	// checking whose it is.
	RenewedOverAnother = "renewed-over-another"
	// ReleasedOverAnother: a third client's release, sent while the first
	// holder held the key, was answered ok before the second grant: the
	// lock's release removes a lock that is not the caller's.
	ReleasedOverAnother = "released-over-another"
)

// beyond reports whether the tenure went on past what ends it under the
// lease model (a failed release, a crash) or took in a grant of its own
// (mutex model): the holder's beliefs about its lease from then on are of
// a lease the model does not see, and must not change how the grants
// that came during its own lease are classified.
func (iv Interval) beyond() bool {
	return iv.cut() != 0 || iv.fate().Regranted != 0
}

// extendedTo moves the holder's lease belief to until by an extend sent
// at sent, keeping the belief it replaces: a grant to another before the
// extend was sent is judged by what the holder believed then (an extend
// answered ok over another's grant does not make the holder's lease
// valid at that grant after the fact). From when it was sent, not when it
// was answered: a grant while it was under way counts the new lease.
func (iv *Interval) extendedTo(until, sent int64) {
	if until == iv.ValidUntil {
		return
	}
	old := iv.ValidUntil
	iv.note(func(f *Fate) { f.Earlier = append(slices.Clip(f.Earlier), Belief{Until: old, Replaced: sent}) })
	iv.ValidUntil = until
}

// believedAt is the lease end the holder believed in at t.
func (iv Interval) believedAt(t int64) int64 {
	for _, b := range iv.fate().Earlier {
		if t < b.Replaced {
			return b.Until
		}
	}
	return iv.ValidUntil
}

// toldBefore reports whether the lock's loss signal told the holder its
// lock was gone at or before t: whatever it believed of its lease, its
// tenure was over as far as the lock's contract goes, so a grant from then
// on went to another after the holder's lease, as one after its expiry
// does (a session lock that heartbeats believes in its session until the
// library says otherwise). An extend answered "not held" is not that: a
// lease lost before its time (a server's clock jump, a restart) is the
// service's failure, told or not.
func (iv Interval) toldBefore(t int64) bool {
	l := iv.fate().Lost
	return l != 0 && l <= t
}

// fate is what befell the tenure (the zero Fate: nothing).
func (iv Interval) fate() Fate {
	if iv.Fate == nil {
		return Fate{}
	}
	return *iv.Fate
}

// note changes what befell the tenure, on a copy: earlier copies of the
// interval (a double grant's) keep what they said.
func (iv *Interval) note(change func(*Fate)) {
	f := iv.fate()
	change(&f)
	iv.Fate = &f
}

// FailedRelease is a release answered "fail": it certainly did not take
// effect.
type FailedRelease struct {
	Invoke, Answer           int64 // times of its invoke and its answer
	InvokeIndex, AnswerIndex int64
	Error                    string
}

// cut is where the holder's certain span would end under the lease model
// although its tenure goes on under the mutex model: its first failed
// release's invocation, or its crash, whichever came first (0: neither).
func (iv Interval) cut() int64 {
	f := iv.fate()
	c := f.Crashed
	if f.Failed != nil && (c == 0 || f.Failed.Invoke < c) {
		c = f.Failed.Invoke
	}
	return c
}

// toldNotHeld reports whether a failed release's error tells its holder
// that the lock was no longer its own. Every failed release does (a
// "not held", Jepsen's :not-held, etcd's "lease not found"), except one
// that never reached the server: locklab's "unavailable".
func toldNotHeld(err string) bool {
	return !strings.Contains(strings.ToLower(err), "unavailable")
}

// Kinds of double grant.
const (
	// BothValid: the second grant came while the first holder's lease was
	// still valid: the lock service broke mutual exclusion.
	BothValid = "both leases valid"
	// HeldAtOnce: the same where neither holder recorded a lease (a plain
	// mutex's history): two holders at once.
	HeldAtOnce = "two holders at once"
	// OutlivedLease: the first holder went on past its own lease expiry
	// (a pause, a slow request): the service was entitled to grant again;
	// only fencing saves the resource.
	OutlivedLease = "holder outlived its lease"
	// NeverReleased (mutex model only): the second grant came after the
	// first holder's release had failed (or it had crashed, or, granted
	// again itself, made no release in between): nothing expires, so it
	// still held the lock.
	NeverReleased = "holder never released"
)

// DoubleGrant is two holders at once on one key.
type DoubleGrant struct {
	Key    string
	Kind   string   // BothValid, HeldAtOnce, OutlivedLease or NeverReleased
	Held   Interval // the earlier holder
	Second Interval // the holder granted while Held was still held
	// Mechanism is what the history shows of how it came about, beyond
	// its kind: RenewedOverAnother, ReleasedOverAnother, or "".
	Mechanism string
}

// mechanism is what held's fate shows of how second came to be granted
// while held held the key (a double grant of kind). A release over held's
// hold explains only a grant the lock was not entitled to make: one after
// held outlived its lease needs no release to explain it.
func mechanism(kind string, held, second Interval) string {
	f := held.fate()
	switch {
	case f.ReleasedOver != nil && f.ReleasedOver.Invoke < second.Start && kind != OutlivedLease:
		return ReleasedOverAnother
	case f.RenewedOver != nil && f.RenewedOver.Proc == second.Proc:
		return RenewedOverAnother
	}
	return ""
}

// Class is the violation class of the double grant.
func (d DoubleGrant) Class() Class {
	switch d.Kind {
	case OutlivedLease:
		return DoubleGrantOutlived
	case NeverReleased:
		return DoubleGrantNeverReleased
	case HeldAtOnce:
		return DoubleGrantHeldAtOnce
	}
	return DoubleGrantBothValid
}

// Events are the events that prove the double grant: the holder's grant,
// what left it holding (a failed release, a crash) when the kind says so,
// and the second grant.
func (d DoubleGrant) Events() []int64 {
	evs := []int64{d.Held.StartIndex}
	if o := d.overlap(); o != nil {
		evs = append(evs, o.InvokeIndex, o.AnswerIndex)
	}
	if d.Kind == NeverReleased {
		fate := d.Held.fate()
		if f := fate.Failed; f != nil && f.Invoke <= d.Second.Start {
			evs = append(evs, f.InvokeIndex, f.AnswerIndex)
		}
		if fate.Crashed != 0 && fate.Crashed <= d.Second.Start {
			evs = append(evs, fate.CrashIndex)
		}
	}
	return append(evs, d.Second.StartIndex)
}

// overlap is the call its Mechanism names (nil: none).
func (d DoubleGrant) overlap() *Overlap {
	switch d.Mechanism {
	case ReleasedOverAnother:
		return d.Held.fate().ReleasedOver
	case RenewedOverAnother:
		return d.Held.fate().RenewedOver
	}
	return nil
}

// Describe says what happened in words, with times relative to origin.
func (d DoubleGrant) Describe(origin int64) string {
	rel := func(t int64) string { return fmt.Sprintf("%.6f s", time.Duration(t-origin).Seconds()) }
	how := ""
	switch o := d.overlap(); d.Mechanism {
	case ReleasedOverAnother:
		how = fmt.Sprintf("; client %d's release, sent at %s while client %d held it, was answered ok before that grant (%s, events %d, %d)",
			o.Proc, rel(o.Invoke), d.Held.Proc, d.Mechanism, o.InvokeIndex, o.AnswerIndex)
	case RenewedOverAnother:
		how = fmt.Sprintf("; client %d's extend, sent at %s while client %d held it, was answered ok (%s, events %d, %d)",
			o.Proc, rel(o.Invoke), d.Second.Proc, d.Mechanism, o.InvokeIndex, o.AnswerIndex)
	}
	if d.Kind == NeverReleased {
		return d.describeNeverReleased(rel) + how
	}
	released := "never released it"
	if d.Held.End != Open {
		released = "released at " + rel(d.Held.End)
	}
	lease := ""
	if believed := d.Held.believedAt(d.Second.Start); believed != 0 {
		lease = fmt.Sprintf("; its lease ran to %s", rel(believed))
	}
	if d.Held.toldBefore(d.Second.Start) {
		lease += fmt.Sprintf("; it was told at %s that its lock was gone", rel(d.Held.fate().Lost))
	}
	return fmt.Sprintf("client %d acquired %s at %s while client %d held it since %s and %s%s: %s (events %d, %d)%s",
		d.Second.Proc, lockName(d.Key), rel(d.Second.Start), d.Held.Proc, rel(d.Held.Start), released, lease, d.Kind,
		d.Second.StartIndex, d.Held.StartIndex, how)
}

// describeNeverReleased names, as Knossos would, which grant came while
// whose lock was never released, and why it was still held.
func (d DoubleGrant) describeNeverReleased(rel func(int64) string) string {
	var why []string
	fate := d.Held.fate()
	if f := fate.Failed; f != nil && f.Invoke <= d.Second.Start {
		e := ""
		if f.Error != "" {
			e = " (" + f.Error + ")"
		}
		why = append(why, fmt.Sprintf("its release invoked at %s failed at %s%s, and a failed operation never happened", rel(f.Invoke), rel(f.Answer), e))
	}
	if fate.Crashed != 0 && fate.Crashed <= d.Second.Start {
		why = append(why, fmt.Sprintf("it crashed at %s, and nothing expires", rel(fate.Crashed)))
	}
	if len(why) == 0 {
		why = append(why, "it made no release in between, and the mutex has no re-entry")
	}
	who := fmt.Sprintf("client %d acquired %s at %s while client %d held it", d.Second.Proc, lockName(d.Key), rel(d.Second.Start), d.Held.Proc)
	if d.Second.Proc == d.Held.Proc {
		who = fmt.Sprintf("client %d acquired %s again at %s while it held it", d.Second.Proc, lockName(d.Key), rel(d.Second.Start))
	}
	evs := make([]string, 0, 4)
	for _, e := range d.Events() {
		evs = append(evs, fmt.Sprint(e))
	}
	return fmt.Sprintf("%s since %s and never released it: %s (events %s)", who, rel(d.Held.Start), strings.Join(why, "; "), strings.Join(evs, ", "))
}

type procKey struct {
	proc int
	key  string
}

// Mutex collects holder intervals from a stream of events and finds double
// grants and phantom releases, under its Model. Only acquires that returned
// ok count as grants: a failed acquire did not happen, and an indeterminate
// one proves nothing on its own.
type Mutex struct {
	model     Model
	open      map[procKey]Interval
	intervals map[string][]Interval
	// closing is where the interval a release's invocation closed sits in
	// intervals (lease model), until that release's answer: a "not held"
	// tells the holder its lock had been taken away.
	closing map[procKey]int
	// releasing is a holder's release in flight (mutex model): the tenure
	// ends at its invocation if it succeeds or is indeterminate, and goes on
	// if it fails.
	releasing map[procKey]releaseCall
	// regrants (mutex model): a holder granted the lock again.
	regrants []DoubleGrant
	// infoAcquire: an acquire whose outcome is unknown; if the process
	// later releases the key, the acquire took effect (Knossos: it may
	// take effect at any time after its invocation, or never).
	infoAcquire map[procKey]bool
	// unheld: a release invoked by a process that holds nothing there.
	unheld map[procKey]releaseCall
	// pointRelease: a release by a process whose acquire was
	// indeterminate. Its tenure is as short as the model allows: one
	// instant inside the release, which must find the lock free of every
	// other holder's certain span (see pointFits).
	pointRelease map[procKey]pointRel
	// pointChecks are decided once the whole history is in (Phantoms):
	// events of different processes may arrive a little out of time
	// order, and every other holder's span must be known.
	pointChecks []pointCheck
	phantoms    []Phantom
	// Re-entry (an acquire marked history.Event.Reentry, by a holder):
	// depth counts a holder's re-entries granted and not yet given back,
	// each by one release before the one that ends its tenure;
	// reentering is a re-entry asked and not yet answered; inner is a
	// release that gives one back, in flight (under the mutex model its
	// answer decides whether it happened).
	depth      map[procKey]int
	reentering map[procKey]bool
	inner      map[procKey]bool
	// extending is an extend asked and not yet answered; holding is each
	// key's processes with an open tenure (an ok extend or release looks
	// for another holder among them, not through every key's).
	extending map[procKey]releaseCall
	holding   map[string]map[int]bool
	// asking is when each process's acquire in flight was sent.
	asking map[procKey]int64
	origin int64
	seen   bool
}

type releaseCall struct {
	t, index int64
}

// Phantom is a release that succeeded for a process that did not hold the
// lock: no order of events allows it.
type Phantom struct {
	Key        string
	Proc       int
	T          int64
	Index      int64 // of the release's ok
	InvokeIdx  int64
	LastHolder int // the process that held the key before, -1 if none
}

// NewMutex returns an empty checker judging under model.
func NewMutex(model Model) *Mutex {
	return &Mutex{model: model, open: map[procKey]Interval{}, intervals: map[string][]Interval{}, closing: map[procKey]int{},
		releasing: map[procKey]releaseCall{}, infoAcquire: map[procKey]bool{}, unheld: map[procKey]releaseCall{}, pointRelease: map[procKey]pointRel{},
		depth: map[procKey]int{}, reentering: map[procKey]bool{}, inner: map[procKey]bool{}, extending: map[procKey]releaseCall{},
		holding: map[string]map[int]bool{}, asking: map[procKey]int64{}}
}

// Model is the model the checker judges under.
func (m *Mutex) Model() Model { return m.model }

type pointRel struct {
	t     int64 // the release's invocation
	index int64
}

type pointCheck struct {
	pk           procKey
	rel          pointRel
	okT, okIndex int64
}

// Add feeds one event, in history order.
func (m *Mutex) Add(ev history.Event) {
	if !m.seen || ev.T < m.origin {
		m.origin, m.seen = ev.T, true
	}
	pk := procKey{ev.Proc, ev.Key}
	if ev.Type == history.Invoke && (ev.F == history.Acquire || ev.F == history.Release) {
		// A new call while a release had no answer: that release stays
		// indeterminate, so it took effect at its invocation at the
		// earliest (the most permissive choice).
		m.endRelease(pk)
		delete(m.closing, pk)
		m.endInner(pk)
	}
	reentry := false
	if ev.F == history.Acquire && ev.Type != history.Invoke {
		reentry = m.reentering[pk] || ev.Reentry
		delete(m.reentering, pk)
		if iv, held := m.open[pk]; held && reentry && ev.Type == history.OK {
			m.reenter(pk, iv, ev)
			return
		}
	}
	switch {
	case ev.F == history.Crash:
		m.crash(ev)
	case ev.F == history.Extend && ev.Type != history.Invoke && ev.Type != history.OK:
		delete(m.extending, pk)
		if ev.Type == history.Fail && strings.Contains(ev.Error, "not held") {
			m.told(pk, ev)
		}
	case ev.F == history.Acquire && ev.Type == history.Invoke:
		if ev.Reentry {
			m.reentering[pk] = true
		}
		m.asking[pk] = ev.T
	case ev.F == history.Acquire && ev.Type == history.OK:
		m.granted(pk, ev, reentry)
	case ev.F == history.Acquire && ev.Type == history.Info:
		if _, held := m.open[pk]; !held {
			m.infoAcquire[pk] = true
		}
	case ev.F == history.Extend && ev.Type == history.Invoke:
		m.extending[pk] = releaseCall{t: ev.T, index: ev.Index}
	case ev.F == history.Extend && ev.Type == history.OK:
		m.extended(pk, ev)
	case ev.F == history.Lost:
		m.told(pk, ev)
	case ev.F == history.Release && ev.Type != history.Invoke && m.inner[pk]:
		m.innerAnswered(pk, ev)

	case ev.F == history.Release && ev.Type == history.Fail:
		m.releaseFailed(pk, ev)
	case ev.F == history.Release && ev.Type == history.Info:
		m.endRelease(pk)
		delete(m.closing, pk)
		delete(m.pointRelease, pk) // it may not have taken effect
		delete(m.unheld, pk)
	case ev.F == history.Release && ev.Type == history.OK:
		m.released(pk, ev)
	case ev.F == history.Release && ev.Type == history.Invoke:
		m.releaseInvoked(pk, ev)
	}
}

// granted follows an acquire answered ok (reentry: it was meant to
// re-enter; a holder's re-entry was taken before this).
func (m *Mutex) granted(pk procKey, ev history.Event, reentry bool) {
	if !reentry {
		// A re-entry granted to a client that does not hold leaves its
		// indeterminate acquire as it was: that may take effect later
		// still, as late as inside a release the re-entry's holds do not
		// account for (a point release).
		delete(m.infoAcquire, pk)
	}
	m.endRelease(pk) // a grant with no invoke before it: the release it followed is indeterminate
	if iv, held := m.open[pk]; held {
		if m.model == ModelMutex {
			// Acquire needs the lock free, and only its holder's own
			// release frees it: no order of events allows this grant.
			m.regrants = append(m.regrants, DoubleGrant{Key: ev.Key, Kind: NeverReleased, Held: iv,
				Second: Interval{Key: ev.Key, Proc: ev.Proc, Start: ev.T, End: Open, StartIndex: ev.Index, EndIndex: -1,
					ValidUntil: ev.ValidUntil, Token: ev.Token}})
			if iv.fate().Regranted == 0 {
				iv.note(func(f *Fate) { f.Regranted = ev.T })
				m.open[pk] = iv
			}
		}
		return // the tenure goes on (a lease lock's re-entry by its holder)
	}
	m.open[pk] = Interval{Key: ev.Key, Proc: ev.Proc, Start: ev.T, End: Open, StartIndex: ev.Index, EndIndex: -1,
		ValidUntil: ev.ValidUntil, Token: ev.Token, Asked: m.asking[pk]}
	delete(m.asking, pk)
	if m.holding[ev.Key] == nil {
		m.holding[ev.Key] = map[int]bool{}
	}
	m.holding[ev.Key][ev.Proc] = true
}

// extended follows an extend answered ok: the holder's lease belief
// moves on, and an extend sent while another held the key is noted.
func (m *Mutex) extended(pk procKey, ev history.Event) {
	inv, asked := m.extending[pk]
	delete(m.extending, pk)
	iv, held := m.open[pk]
	if !held {
		return
	}
	if ev.ValidUntil != 0 && !iv.beyond() {
		sent := ev.T
		if asked {
			sent = inv.t
		}
		iv.extendedTo(ev.ValidUntil, sent)
	}
	if asked && iv.fate().RenewedOver == nil {
		if other, ok := m.otherHolder(pk, iv.Start, inv.t); ok {
			iv.note(func(f *Fate) {
				f.RenewedOver = &Overlap{Proc: other.proc, Invoke: inv.t, InvokeIndex: inv.index, AnswerIndex: ev.Index}
			})
		}
	}
	m.open[pk] = iv
}

// letGo takes pk's tenure out of its key's holders (the key's set stays,
// for its next holder: one allocation per key, not per grant).
func (m *Mutex) letGo(pk procKey) { delete(m.holding[pk.key], pk.proc) }

// otherHolder is the process other than pk's that has held pk's key the
// longest, since before t, if one has: one granted after since (pk's own
// tenure began). One that held already when pk's tenure began is not
// renewed over: pk was granted over it, the double grant to report.
func (m *Mutex) otherHolder(pk procKey, since, t int64) (procKey, bool) {
	var found procKey
	ok := false
	for proc := range m.holding[pk.key] {
		opk := procKey{proc, pk.key}
		if iv := m.open[opk]; proc != pk.proc && iv.Start > since && iv.Start < t && (!ok || iv.Start < m.open[found].Start) {
			found, ok = opk, true
		}
	}
	return found, ok
}

// releasedOver notes, on every other tenure holding the key since before
// the release was sent, a release answered ok by pk. Not on one that
// already held when pk's own tenure began: pk was granted over it, and
// its release gives back that grant (itself the double grant to report),
// not another's hold.
func (m *Mutex) releasedOver(pk procKey, inv releaseCall, ev history.Event) {
	own, owned := m.tenureSince(pk)
	for proc := range m.holding[pk.key] {
		opk := procKey{proc, pk.key}
		iv := m.open[opk]
		if owned && own > iv.Start {
			continue
		}
		if proc != pk.proc && iv.Start < inv.t && iv.fate().ReleasedOver == nil {
			iv.note(func(f *Fate) {
				f.ReleasedOver = &Overlap{Proc: pk.proc, Invoke: inv.t, InvokeIndex: inv.index, AnswerIndex: ev.Index}
			})
			m.open[opk] = iv
		}
	}
}

// tenureSince is when the tenure pk's release in flight gives back began
// (false: none, a release by a client that did not hold the key).
func (m *Mutex) tenureSince(pk procKey) (int64, bool) {
	if i, ok := m.closing[pk]; ok {
		return m.intervals[pk.key][i].Start, true
	}
	if iv, ok := m.open[pk]; ok {
		return iv.Start, true
	}
	return 0, false
}

// releaseSent is when pk's release in flight was sent, however it was
// taken (a holder's, a non-holder's, one after an indeterminate acquire).
func (m *Mutex) releaseSent(pk procKey) (releaseCall, bool) {
	if r, ok := m.releasing[pk]; ok {
		return r, true
	}
	if i, ok := m.closing[pk]; ok {
		iv := m.intervals[pk.key][i]
		return releaseCall{t: iv.End, index: iv.EndIndex}, true
	}
	if r, ok := m.unheld[pk]; ok {
		return r, true
	}
	if p, ok := m.pointRelease[pk]; ok {
		return releaseCall{t: p.t, index: p.index}, true
	}
	return releaseCall{}, false
}

// told follows a holder being told its lock is gone (an extend answered
// not held, or the library's lost signal).
func (m *Mutex) told(pk procKey, ev history.Event) {
	iv, held := m.open[pk]
	if !held {
		return
	}
	if iv.Learned == 0 {
		iv.Learned = ev.T
	}
	if iv.fate().Signal == 0 {
		iv.note(func(f *Fate) { f.Signal, f.SignalIndex, f.SignalLease = ev.T, ev.Index, iv.ValidUntil })
	}
	if ev.F == history.Lost && iv.fate().Lost == 0 {
		iv.note(func(f *Fate) { f.Lost = ev.T })
	}
	m.open[pk] = iv
}

// released follows a release answered ok.
func (m *Mutex) released(pk procKey, ev history.Event) {
	if inv, ok := m.releaseSent(pk); ok {
		m.releasedOver(pk, inv, ev)
	}
	m.endRelease(pk)
	delete(m.closing, pk)
	if p, ok := m.pointRelease[pk]; ok {
		delete(m.pointRelease, pk)
		m.pointChecks = append(m.pointChecks, pointCheck{pk: pk, rel: p, okT: ev.T, okIndex: ev.Index})
	}
	if r, ok := m.unheld[pk]; ok {
		delete(m.unheld, pk)
		m.phantoms = append(m.phantoms, Phantom{Key: ev.Key, Proc: ev.Proc, T: ev.T, Index: ev.Index, InvokeIdx: r.index,
			LastHolder: m.lastHolder(ev.Key, ev.Proc)})
	}
}

// releaseInvoked follows a release's invocation.
func (m *Mutex) releaseInvoked(pk procKey, ev history.Event) {
	iv, held := m.open[pk]
	if held && m.depth[pk] > 0 {
		// It gives back a re-entry: the tenure goes on. Under the lease
		// model it does so at its invocation whatever the answer, as a
		// tenure's end does; under the mutex model its answer decides.
		m.inner[pk] = true
		if m.model == ModelLease {
			m.depth[pk]--
		}
		return
	}
	if !held {
		if m.infoAcquire[pk] {
			// Its indeterminate acquire took effect after all; a
			// tenure as short as the model allows, inside this
			// release, which its answer settles.
			delete(m.infoAcquire, pk)
			m.pointRelease[pk] = pointRel{t: ev.T, index: ev.Index}
			return
		}
		m.unheld[pk] = releaseCall{t: ev.T, index: ev.Index}
		return
	}
	if ev.ValidUntil != 0 && !iv.beyond() {
		iv.ValidUntil = ev.ValidUntil // its belief as it lets go
	}
	if m.model == ModelMutex {
		// Its answer decides: a failed release never happened.
		m.open[pk] = iv
		m.releasing[pk] = releaseCall{t: ev.T, index: ev.Index}
		return
	}
	delete(m.open, pk)
	m.letGo(pk)
	iv.End, iv.EndIndex = ev.T, ev.Index
	m.closing[pk] = m.closeInterval(iv)
}

// reenter takes a re-entry granted to pk's holder: one more release
// before the tenure ends. The grant renews the holder's belief about its
// lease, as an extend does (a re-entrant lock refreshes its lease).
func (m *Mutex) reenter(pk procKey, iv Interval, ev history.Event) {
	delete(m.infoAcquire, pk)
	m.depth[pk]++
	if ev.ValidUntil != 0 && !iv.beyond() {
		iv.ValidUntil = ev.ValidUntil
		m.open[pk] = iv
	}
}

// endInner settles a release of a re-entry that got no answer before its
// process went on (mutex model: it may have taken effect, the permissive
// choice).
func (m *Mutex) endInner(pk procKey) {
	if !m.inner[pk] {
		return
	}
	delete(m.inner, pk)
	if m.model == ModelMutex && m.depth[pk] > 0 {
		m.depth[pk]--
	}
}

// innerAnswered takes the answer to a release of a re-entry. Under the
// mutex model an ok or indeterminate one gave the re-entry back and a
// failed one never happened; under the lease model it was given back at
// the invocation, and a "not held" is the holder's news that its lock
// had gone.
func (m *Mutex) innerAnswered(pk procKey, ev history.Event) {
	delete(m.inner, pk)
	if m.model == ModelMutex {
		if ev.Type != history.Fail && m.depth[pk] > 0 {
			m.depth[pk]--
		}
		return
	}
	if iv, held := m.open[pk]; held && ev.Type == history.Fail && toldNotHeld(ev.Error) && iv.Learned == 0 {
		iv.Learned = ev.T
		m.open[pk] = iv
	}
}

// crash records that a process died. Under the lease model a crashed
// holder does nothing more: its tenure ends here, and the server may give
// the lock to someone else later. Under the mutex model nothing expires:
// its tenure goes on. What it had in flight stays indeterminate.
func (m *Mutex) crash(ev history.Event) {
	forget(m.reentering, ev.Proc)
	forget(m.asking, ev.Proc)
	forget(m.inner, ev.Proc)
	if m.model == ModelLease {
		forget(m.depth, ev.Proc)
	}
	forget(m.pointRelease, ev.Proc)
	forget(m.infoAcquire, ev.Proc)
	forget(m.unheld, ev.Proc)
	forget(m.closing, ev.Proc)
	forget(m.extending, ev.Proc)
	for opk, iv := range m.open {
		if opk.proc != ev.Proc {
			continue
		}
		if iv.fate().Crashed == 0 {
			iv.note(func(f *Fate) { f.Crashed, f.CrashIndex = ev.T, ev.Index })
		}
		if m.model == ModelMutex {
			m.open[opk] = iv
			continue
		}
		delete(m.open, opk)
		m.letGo(opk)
		iv.End, iv.EndIndex = ev.T, ev.Index
		m.closeInterval(iv)
	}
}

// forget drops what m knows of proc, on every key.
func forget[V any](m map[procKey]V, proc int) {
	for pk := range m {
		if pk.proc == proc {
			delete(m, pk)
		}
	}
}

// releaseFailed takes a release answered "fail": it did not take effect.
func (m *Mutex) releaseFailed(pk procKey, ev history.Event) {
	if _, ok := m.unheld[pk]; ok {
		delete(m.unheld, pk) // a non-holder's release, refused: nothing happened
		return
	}
	if _, ok := m.pointRelease[pk]; ok {
		// The acquire it followed never took effect, it seems; under the
		// mutex model the release never happened, so that acquire still
		// may, as it could before.
		delete(m.pointRelease, pk)
		if m.model == ModelMutex {
			m.infoAcquire[pk] = true
		}
		return
	}
	f := FailedRelease{Answer: ev.T, AnswerIndex: ev.Index, Error: ev.Error}
	tell := func(iv *Interval) {
		if iv.fate().Failed == nil {
			iv.note(func(fate *Fate) { fate.Failed = &f })
		}
		if iv.Learned == 0 && toldNotHeld(ev.Error) {
			iv.Learned = ev.T // told the lock was no longer its own: it was taken away
		}
	}
	if m.model == ModelMutex {
		r, ok := m.releasing[pk]
		if !ok {
			return
		}
		delete(m.releasing, pk)
		iv := m.open[pk]
		f.Invoke, f.InvokeIndex = r.t, r.index
		tell(&iv)
		m.open[pk] = iv // it still holds
		return
	}
	i, ok := m.closing[pk]
	if !ok {
		return
	}
	delete(m.closing, pk)
	iv := &m.intervals[pk.key][i]
	f.Invoke, f.InvokeIndex = iv.End, iv.EndIndex
	tell(iv)
}

// endRelease ends the tenure of pk at its release in flight, if one is
// (mutex model): the release succeeded, or may have.
func (m *Mutex) endRelease(pk procKey) {
	r, ok := m.releasing[pk]
	if !ok {
		return
	}
	delete(m.releasing, pk)
	iv := m.open[pk]
	delete(m.open, pk)
	m.letGo(pk)
	iv.End, iv.EndIndex = r.t, r.index
	m.closeInterval(iv)
}

// settlePoints decides every point release answered so far, against the
// spans known now; Phantoms calls it once the whole history is in.
func (m *Mutex) settlePoints() {
	if len(m.pointChecks) == 0 {
		return
	}
	byKey := map[string][]pointCheck{}
	for _, c := range m.pointChecks {
		byKey[c.pk.key] = append(byKey[c.pk.key], c)
	}
	m.pointChecks = nil
	all := m.Intervals()
	for key, checks := range byKey {
		busy := busySpans(all[key])
		for _, c := range checks {
			if !pointFits(busy, c.rel.t, c.okT) {
				m.phantoms = append(m.phantoms, Phantom{Key: key, Proc: c.pk.proc, T: c.okT, Index: c.okIndex, InvokeIdx: c.rel.index,
					LastHolder: m.lastHolder(key, c.pk.proc)})
			}
		}
	}
	sort.SliceStable(m.phantoms, func(i, j int) bool { return m.phantoms[i].T < m.phantoms[j].T })
}

// busySpans merges the certain spans of a key's tenures (open ones to the
// end of time) into disjoint spans sorted by start. Spans that only touch
// stay apart: instants that tie may be ordered either way, so a one-instant
// tenure fits between them. The releasing process's own spans can be in
// the union: they all ended before its indeterminate acquire was invoked.
func busySpans(ivs []Interval) [][2]int64 {
	spans := make([][2]int64, 0, len(ivs))
	for _, iv := range ivs {
		spans = append(spans, [2]int64{iv.Start, iv.End})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var merged [][2]int64
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp[0] < merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// pointFits reports whether some instant in [from, to] is free of the busy
// spans: not so when one span starts before from and ends after to.
func pointFits(busy [][2]int64, from, to int64) bool {
	i := sort.Search(len(busy), func(i int) bool { return busy[i][0] >= from }) - 1
	return i < 0 || busy[i][1] <= to
}

// closeInterval files a tenure that ended, returning where it sits among
// its key's intervals.
func (m *Mutex) closeInterval(iv Interval) int {
	m.intervals[iv.Key] = append(m.intervals[iv.Key], iv)
	return len(m.intervals[iv.Key]) - 1
}

// lastHolder is the process whose tenure on key started last, other than
// proc (-1 if none): who a phantom release took the lock from.
func (m *Mutex) lastHolder(key string, proc int) int {
	best, who := int64(math.MinInt64), -1
	for _, iv := range m.intervals[key] {
		if iv.Proc != proc && iv.Start > best {
			best, who = iv.Start, iv.Proc
		}
	}
	for _, iv := range m.open {
		if iv.Key == key && iv.Proc != proc && iv.Start > best {
			best, who = iv.Start, iv.Proc
		}
	}
	return who
}

// Phantoms are the releases that succeeded without their process holding
// the lock.
func (m *Mutex) Phantoms() []Phantom {
	m.settlePoints()
	return append([]Phantom(nil), m.phantoms...)
}

// Keys lists the keys that had a holder.
func (m *Mutex) Keys() []string {
	seen := map[string]bool{}
	for k := range m.intervals {
		seen[k] = true
	}
	for pk := range m.open {
		seen[pk.key] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	return out
}

// Origin is the earliest event time seen, for relative times in reports.
func (m *Mutex) Origin() int64 { return m.origin }

// Intervals returns every holder interval, open ones included, per key. A
// release still unanswered when the history ends (mutex model) is
// indeterminate: its tenure ends at its invocation.
func (m *Mutex) Intervals() map[string][]Interval {
	out := make(map[string][]Interval, len(m.intervals))
	for k, ivs := range m.intervals {
		out[k] = append([]Interval(nil), ivs...)
	}
	for pk, iv := range m.open {
		if r, ok := m.releasing[pk]; ok {
			iv.End, iv.EndIndex = r.t, r.index
		}
		out[iv.Key] = append(out[iv.Key], iv)
	}
	return out
}

// tenures are every key's intervals in grant order, the keys in order:
// what the checks after the sweep read, built once (a long run has
// millions).
type tenures struct {
	keys []string
	all  map[string][]Interval
}

// sortedIntervals returns the keys in order and each key's intervals in
// grant order.
func (m *Mutex) sortedIntervals() tenures {
	all := m.Intervals()
	keys := make([]string, 0, len(all))
	for k, ivs := range all {
		keys = append(keys, k)
		sort.Slice(ivs, func(i, j int) bool {
			if ivs[i].Start != ivs[j].Start {
				return ivs[i].Start < ivs[j].Start
			}
			return ivs[i].StartIndex < ivs[j].StartIndex
		})
	}
	sort.Strings(keys)
	return tenures{keys: keys, all: all}
}

// DoubleGrants returns every interval that began while an earlier holder's
// interval on the same key had not yet ended, and (mutex model) every
// grant to a process that already held the key, sorted by key and time.
func (m *Mutex) DoubleGrants() []DoubleGrant { return m.doubleGrants(m.sortedIntervals()) }

func (m *Mutex) doubleGrants(t tenures) []DoubleGrant {
	var out []DoubleGrant
	for _, k := range t.keys {
		ivs := t.all[k]
		// Sweep: reach is the interval that extends furthest so far.
		var reach Interval
		for i, iv := range ivs {
			if i > 0 && iv.Start < reach.End {
				out = append(out, DoubleGrant{Key: k, Kind: m.kind(reach, iv), Held: reach, Second: iv, Mechanism: mechanism(m.kind(reach, iv), reach, iv)})
			}
			if i == 0 || iv.End > reach.End {
				reach = iv
			}
		}
	}
	if len(m.regrants) > 0 {
		out = append(out, m.regrants...)
		sort.SliceStable(out, func(i, j int) bool {
			if out[i].Key != out[j].Key {
				return out[i].Key < out[j].Key
			}
			return out[i].Second.Start < out[j].Second.Start
		})
	}
	return out
}

// kind classifies a grant that came while held was held, by what held
// believed of its lease at that grant.
func (m *Mutex) kind(held, second Interval) string {
	if c := held.cut(); m.model == ModelMutex && c != 0 && second.Start >= c {
		return NeverReleased
	}
	believed := held.believedAt(second.Start)
	if believed != 0 && second.Start >= believed || held.toldBefore(second.Start) {
		return OutlivedLease
	}
	if believed == 0 && second.ValidUntil == 0 {
		return HeldAtOnce
	}
	return BothValid
}

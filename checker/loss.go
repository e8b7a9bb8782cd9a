package checker

import (
	"fmt"
	"sort"
	"time"
)

// RevokedInRelease (lease model) is no violation but an anomaly: a
// holder's release was answered "not held". Its lease had gone before the
// release reached the server: the lock was granted to another while the
// release was in flight, or to nobody meanwhile.
const RevokedInRelease Class = "revoked during release"

// firstOther is the first of ivs (sorted by start) granted to a process
// other than proc at or after lo and before hi.
func firstOther(ivs []Interval, proc int, lo, hi int64) (Interval, bool) {
	for i := sort.Search(len(ivs), func(i int) bool { return ivs[i].Start >= lo }); i < len(ivs) && ivs[i].Start < hi; i++ {
		if ivs[i].Proc != proc {
			return ivs[i], true
		}
	}
	return Interval{}, false
}

// takenWhileHeld reports whether another process was granted the key
// after iv's grant and before its tenure ended: a double grant, which the
// sweep reports.
func takenWhileHeld(ivs []Interval, iv Interval) bool {
	_, ok := firstOther(ivs, iv.Proc, iv.Start+1, iv.End)
	return ok
}

// revokedInRelease finds, under the lease model, each holder whose release
// was answered "not held" while nobody else was granted the key during its
// tenure (that would be a double grant, reported as one): its lease had
// gone before the release reached the server. Not a violation: the model
// ends a tenure at its release's invocation, and a lease may expire. It is
// reported so that it is not silent: the lock was granted to another while
// the release was in flight, or to nobody meanwhile.
func revokedInRelease(t tenures, origin int64) []Violation {
	rel := func(t int64) string { return fmt.Sprintf("%.6f s", time.Duration(t-origin).Seconds()) }
	var out []Violation
	for _, k := range t.keys {
		ivs := t.all[k]
		for _, iv := range ivs {
			f := iv.fate().Failed
			if f == nil || !toldNotHeld(f.Error) || takenWhileHeld(ivs, iv) {
				continue
			}
			answer := "not held"
			if f.Error != "" {
				answer = f.Error
			}
			v := Violation{Kind: RevokedInRelease, Key: k}
			if g, ok := firstOther(ivs, iv.Proc, f.Invoke, f.Answer+1); ok {
				v.Events = []int64{iv.StartIndex, f.InvokeIndex, g.StartIndex, f.AnswerIndex}
				v.Text = fmt.Sprintf("client %d's hold on %s was taken away while its release was in flight: client %d was granted it at %s, "+
					"after client %d (holder since %s) asked to release it at %s and before the answer came at %s (%s): "+
					"its lease expired before the release reached the server (events %d, %d, %d, %d)",
					iv.Proc, lockName(k), g.Proc, rel(g.Start), iv.Proc, rel(iv.Start), rel(f.Invoke), rel(f.Answer), answer,
					iv.StartIndex, f.InvokeIndex, g.StartIndex, f.AnswerIndex)
			} else {
				v.Events = []int64{iv.StartIndex, f.InvokeIndex, f.AnswerIndex}
				v.Text = fmt.Sprintf("client %d's release of %s, asked at %s, was answered at %s that it did not hold the lock (%s; holder since %s): "+
					"its lease had gone before the release reached the server, with no grant to anyone meanwhile (events %d, %d, %d)",
					iv.Proc, lockName(k), rel(f.Invoke), rel(f.Answer), answer, rel(iv.Start), iv.StartIndex, f.InvokeIndex, f.AnswerIndex)
			}
			out = append(out, v)
		}
	}
	return out
}

// LossSample is one holder told by the lock itself that the lock was gone
// (a Lost signal, or an extend answered "not held"), and how long after
// the server freed it.
type LossSample struct {
	Key  string `json:"key"`
	Proc int    `json:"proc"`
	// Freed is when the server freed the lock, as well as the history
	// shows it: the first grant to another client during the holder's
	// tenure (or its release in flight), or the end of the lease the holder
	// believed in, whichever came first.
	Freed int64  `json:"freed_ns"`
	By    string `json:"freed_by"` // "grant to client N" or "lease end"
	Told  int64  `json:"told_ns"`
	// Latency is Told - Freed: negative when the holder was told before
	// the lock was freed (a session suspended before it expired).
	Latency time.Duration `json:"latency_ns"`
	Events  []int64       `json:"events"` // the holder's grant, the other's grant (when it freed it), the signal
}

// LockLoss is how soon holders learned that their lock had been taken
// away, where the lock can tell them.
type LockLoss struct {
	Told []LossSample `json:"told,omitempty"`
	// NotTold counts holders whose lock was taken away (another client was
	// granted it while they held it or while their release was in flight,
	// or their release was answered "not held") with no signal from the
	// lock before.
	NotTold int `json:"not_told"`
}

// lockLoss measures, for every tenure the lock signalled lost, how long
// after the server freed the lock its holder was told, and counts the
// tenures taken away that no signal announced.
func lockLoss(t tenures) LockLoss {
	var out LockLoss
	for _, k := range t.keys {
		ivs := t.all[k]
		for _, iv := range ivs {
			fate := iv.fate()
			until := iv.End // grants after it came from the holder's own release
			if fate.Failed != nil && fate.Failed.Answer >= until {
				until = fate.Failed.Answer + 1 // a release answered not held: taken away while it was in flight
			}
			g, granted := firstOther(ivs, iv.Proc, iv.Start+1, until)
			if fate.Signal == 0 {
				if granted || (fate.Failed != nil && toldNotHeld(fate.Failed.Error)) {
					out.NotTold++
				}
				continue
			}
			s := LossSample{Key: k, Proc: iv.Proc, Told: fate.Signal, Events: []int64{iv.StartIndex}}
			switch {
			case granted && (fate.SignalLease == 0 || g.Start <= fate.SignalLease):
				s.Freed, s.By = g.Start, fmt.Sprintf("grant to client %d", g.Proc)
				s.Events = append(s.Events, g.StartIndex)
			case fate.SignalLease != 0:
				s.Freed, s.By = fate.SignalLease, "lease end"
			default:
				continue // nothing says when the server freed it
			}
			s.Latency = time.Duration(s.Told - s.Freed)
			s.Events = append(s.Events, fate.SignalIndex)
			out.Told = append(out.Told, s)
		}
	}
	return out
}

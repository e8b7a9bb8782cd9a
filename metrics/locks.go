// Package metrics measures what a lock user asks of a lock beyond its
// latency, from the events of a history as they are recorded: hand-off
// (how long a lock stays free between one holder letting go and a waiting
// client getting it) and fairness (who gets the lock how often, and the
// longest anyone waited).
package metrics

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/history"
)

// Locks takes a history's events one at a time, in about the order they
// happened (events of different processes may arrive slightly out of
// order; each key keeps one release and one grant waiting for its match).
// Not safe for concurrent use.
type Locks struct {
	keys    map[string]*keyState
	invoked map[int]int64 // proc -> invoke time of its acquire in flight
	grants  map[int]int64 // proc -> grants
	tried   map[int]bool  // procs that asked for the lock at all
	handOff *hdrhistogram.Histogram
	// longestWait is the longest acquire, granted or not, in ns.
	longestWait int64
}

type keyState struct {
	// release is the last release of the key not yet matched with the
	// grant after it: by relProc, invoked at relInvoke, answered at relOK.
	relProc          int
	relInvoke, relOK int64
	releaseOpen      bool
	// grant is the last grant not yet matched with the release before
	// it (its event arrived first): to grantProc, asked at grantInvoke.
	grantProc            int
	grantInvoke, grantAt int64
	grantOpen            bool
}

// NewLocks returns empty metrics.
func NewLocks() *Locks {
	return &Locks{
		keys: map[string]*keyState{}, invoked: map[int]int64{}, grants: map[int]int64{}, tried: map[int]bool{},
		handOff: hdrhistogram.New(1, int64(time.Hour), 3),
	}
}

// Observe takes the next event.
func (m *Locks) Observe(ev history.Event) {
	switch {
	case ev.F == history.Acquire && ev.Type == history.Invoke:
		m.invoked[ev.Proc] = ev.T
		m.tried[ev.Proc] = true
	case ev.F == history.Acquire: // its completion
		inv, ok := m.invoked[ev.Proc]
		if !ok {
			return
		}
		delete(m.invoked, ev.Proc)
		m.longestWait = max(m.longestWait, ev.T-inv)
		if ev.Type != history.OK {
			return
		}
		m.grants[ev.Proc]++
		k := m.key(ev.Key)
		if k.releaseOpen && m.match(k.relProc, k.relInvoke, k.relOK, ev.Proc, inv, ev.T) {
			k.releaseOpen = false
			return
		}
		k.grantProc, k.grantInvoke, k.grantAt, k.grantOpen = ev.Proc, inv, ev.T, true
	case ev.F == history.Release && ev.Type == history.Invoke:
		k := m.key(ev.Key)
		k.relProc, k.relInvoke = ev.Proc, ev.T
	case ev.F == history.Release && ev.Type == history.OK:
		k := m.key(ev.Key)
		if k.grantOpen && m.match(k.relProc, k.relInvoke, ev.T, k.grantProc, k.grantInvoke, k.grantAt) {
			k.grantOpen = false
			return
		}
		k.relOK, k.releaseOpen = ev.T, true
	}
}

// match records a hand-off when the grant (asked at ask, granted at
// grant) came to another client that was waiting when the release
// (invoked at relInvoke, answered at relOK) let the lock go: it asked
// before the release was answered and was granted after the release was
// sent. A grant that came before the releaser heard back counts as an
// instant hand-off. Times are compared strictly: a history is stamped to
// the microsecond, and a grant answered in the microsecond the release
// was sent cannot be that release's doing.
func (m *Locks) match(releaser int, relInvoke, relOK int64, grantee int, ask, grant int64) bool {
	if grantee == releaser || ask >= relOK || grant <= relInvoke {
		return false
	}
	_ = m.handOff.RecordValue(max(1, grant-relOK))
	return true
}

func (m *Locks) key(k string) *keyState {
	s := m.keys[k]
	if s == nil {
		s = &keyState{}
		m.keys[k] = s
	}
	return s
}

// HandOff is the distribution of hand-off times, in ns.
func (m *Locks) HandOff() *hdrhistogram.Histogram { return m.handOff }

// Fairness is how evenly the clients got the lock.
type Fairness struct {
	Clients int `json:"clients"` // clients that asked for the lock
	// Jain is Jain's fairness index of the grants per client: 1 when all
	// got the same, 1/n when one got all.
	Jain     float64 `json:"jain_index"`
	MinShare float64 `json:"min_share"` // the smallest client's share of grants
	MaxShare float64 `json:"max_share"`
	// LongestWaitUs is the longest a client waited on one acquire,
	// granted or not, in µs.
	LongestWaitUs float64 `json:"longest_wait_us"`
}

// Fairness summarises the grants per client.
func (m *Locks) Fairness() Fairness {
	f := Fairness{Clients: len(m.tried), LongestWaitUs: float64(m.longestWait) / 1e3}
	var sum, sumSq float64
	f.MinShare = math.Inf(1)
	for p := range m.tried {
		x := float64(m.grants[p])
		sum += x
		sumSq += x * x
		f.MinShare = min(f.MinShare, x)
		f.MaxShare = max(f.MaxShare, x)
	}
	if sum == 0 {
		return Fairness{Clients: f.Clients, LongestWaitUs: f.LongestWaitUs}
	}
	f.Jain = sum * sum / (float64(len(m.tried)) * sumSq)
	f.MinShare /= sum
	f.MaxShare /= sum
	return f
}

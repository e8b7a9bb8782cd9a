package checker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/locklab/locklab/history"
)

// The classes of violation of the resources check, and of token order's.
const (
	LostUpdate     Class = "lost update"
	StaleWrite     Class = "stale write"
	DuplicateTask  Class = "task processed twice"
	TokenRegressed Class = "fencing token did not increase"
)

// Violation is one anomaly with the events that prove it.
type Violation struct {
	Kind   Class   `json:"kind"`
	Key    string  `json:"key"`
	Events []int64 `json:"events"`
	Text   string  `json:"text"`
	// Mechanism is how a double grant came about where the history shows
	// more than its class (RenewedOverAnother, ReleasedOverAnother).
	Mechanism string `json:"mechanism,omitempty"`
	// Window: where and how long the lab must have stood still to have
	// made it (nil: anywhere in its events' span, for any time).
	Window *Window `json:"window,omitempty"`
}

// Resources checks what holders did to the protected resource: each write
// must build on the latest committed value (else an update was lost), a
// write must not carry a fencing token older than one already accepted,
// and a task must be processed once.
type Resources struct {
	origin     int64
	seen       bool
	current    map[string]resourceState
	violations []Violation
	Refused    int // requests a fenced store refused as stale
	Writes     int // writes committed
}

type resourceState struct {
	balance  int64
	known    bool
	maxToken uint64
	tokened  bool
	lastIdx  int64
	lastProc int
	lastT    int64 // the last write's time
	maxT     int64 // the time of the write that carried maxToken
	// recent are the key's last balances written, oldest first, with
	// when: a lost update's write was late by its distance from the
	// first write that replaced the balance it read, not from the last.
	recent []written
}

type written struct {
	balance int64
	t       int64
}

// keepWritten is how many balances a key remembers: a lost update reads a
// balance a few writes old (the double grant's overlap), and one older
// than these is late by more than the oldest's distance anyway.
const keepWritten = 32

// replacedAt is when the balance read was first replaced by another
// (the oldest remembered write when it is older than those; 0: unknown).
func (st resourceState) replacedAt(read int64) int64 {
	for j := len(st.recent) - 2; j >= 0; j-- {
		if st.recent[j].balance == read {
			return st.recent[j+1].t
		}
	}
	if len(st.recent) > 0 {
		return st.recent[0].t
	}
	return 0
}

// NewResources returns an empty checker.
func NewResources() *Resources { return &Resources{current: map[string]resourceState{}} }

type resourceValue struct {
	Balance   *int64 `json:"balance"`
	Read      *int64 `json:"read"`
	Processed *int   `json:"processed"`
}

func (r *Resources) rel(t int64) string {
	return fmt.Sprintf("%.6f s", time.Duration(t-r.origin).Seconds())
}

// Add feeds one event, in history order.
func (r *Resources) Add(ev history.Event) {
	if !r.seen || ev.T < r.origin {
		r.origin, r.seen = ev.T, true
	}
	if ev.F != history.Read && ev.F != history.Write {
		return
	}
	var v resourceValue
	if len(ev.Value) > 0 {
		_ = json.Unmarshal(ev.Value, &v) // other shapes carry nothing to check
	}
	st := r.current[ev.Key]
	switch {
	case ev.F == history.Read && ev.Type == history.OK && v.Balance != nil && !st.known:
		st.balance, st.known = *v.Balance, true
	case ev.Type == history.Fail && ev.Token != nil:
		r.Refused++ // a fenced store turned a stale holder away
	case ev.F == history.Write && ev.Type == history.OK:
		r.Writes++
		if ev.Token != nil {
			if st.tokened && *ev.Token < st.maxToken {
				r.violations = append(r.violations, Violation{Kind: StaleWrite, Key: ev.Key, Events: []int64{st.lastIdx, ev.Index},
					Text: fmt.Sprintf("client %d wrote %s at %s with token %d after a write with token %d was accepted",
						ev.Proc, ev.Key, r.rel(ev.T), *ev.Token, st.maxToken), Window: late(st.maxT, ev.T)})
			}
			if !st.tokened || *ev.Token > st.maxToken {
				st.maxToken, st.tokened, st.maxT = *ev.Token, true, ev.T
			}
		}
		if v.Balance != nil && v.Read != nil {
			if st.known && *v.Read != st.balance {
				r.violations = append(r.violations, Violation{Kind: LostUpdate, Key: ev.Key, Events: []int64{st.lastIdx, ev.Index},
					Text: fmt.Sprintf("client %d wrote %s = %d at %s from a read of %d, but the balance was %d (written by client %d): that update is lost",
						ev.Proc, ev.Key, *v.Balance, r.rel(ev.T), *v.Read, st.balance, st.lastProc), Window: late(st.replacedAt(*v.Read), ev.T)})
			}
			st.balance, st.known = *v.Balance, true
			if len(st.recent) == keepWritten {
				st.recent = append(st.recent[:0], st.recent[1:]...)
			}
			st.recent = append(st.recent, written{*v.Balance, ev.T})
		}
		if v.Processed != nil && *v.Processed > 1 {
			r.violations = append(r.violations, Violation{Kind: DuplicateTask, Key: ev.Key, Events: []int64{st.lastIdx, ev.Index},
				Text:   fmt.Sprintf("client %d processed %s at %s, which client %d had processed already", ev.Proc, ev.Key, r.rel(ev.T), st.lastProc),
				Window: late(st.lastT, ev.T)})
		}
		st.lastIdx, st.lastProc, st.lastT = ev.Index, ev.Proc, ev.T
	}
	r.current[ev.Key] = st
}

func (r *Resources) classes() []Class { return []Class{StaleWrite, LostUpdate, DuplicateTask} }

func (r *Resources) found(sweep) []Violation { return append([]Violation(nil), r.violations...) }

// late is the window of a write that went behind another at before:
// had it come w.Need sooner, it would have come first (a lost update's
// write before the one it overwrote, a stale write before the newer
// token's, a task's second processing before its first).
func late(before, at int64) *Window {
	if before == 0 || at <= before {
		return nil
	}
	return &Window{From: before, To: at, Need: at - before}
}

// TokenOrder checks that successive holders of a key got strictly
// increasing fencing tokens (in the order of their grants).
func TokenOrder(m *Mutex) []Violation { return tokenOrder(m.sortedIntervals()) }

// tokenOrders is TokenOrder as one of the checker's checks.
type tokenOrders struct{}

func (tokenOrders) classes() []Class { return []Class{TokenRegressed} }

func (tokenOrders) found(s sweep) []Violation { return tokenOrder(s.tenures) }

func tokenOrder(t tenures) []Violation {
	var out []Violation
	for _, k := range t.keys {
		ivs := t.all[k]
		var prev *Interval
		for i := range ivs {
			iv := &ivs[i]
			if iv.Token == nil {
				continue
			}
			if prev != nil && *iv.Token <= *prev.Token {
				out = append(out, Violation{Kind: TokenRegressed, Key: k, Events: []int64{prev.StartIndex, iv.StartIndex},
					Text: fmt.Sprintf("client %d got %s with token %d after client %d had it with token %d",
						iv.Proc, lockName(k), *iv.Token, prev.Proc, *prev.Token)})
			}
			prev = iv
		}
	}
	return out
}

package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/fleet"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
)

// holders follows who holds which key, from the events as they are
// recorded: the target "the client that holds key k" is resolved from it
// when a fault fires.
type holders struct {
	mu    sync.Mutex
	byKey map[string]int // key -> proc
	// since: key -> the time of the latest grant or release of it seen.
	// Workers' events arrive out of time order (each has a pipe of its
	// own): a grant older than that is over and must not take the key
	// from its newer holder (seen under load: a release arriving after a
	// newer grant left the key to nobody while it was held).
	since map[string]int64
	// reentered: a holder's re-entries of a key granted and not yet given
	// back, whose releases leave it the holder.
	reentered map[procKey]int
	// renewed: when the key's holder last renewed its lease since its
	// grant (absent: not since); releases counts the releases of each key
	// asked, releasedAt is when the latest was (`when:` renewed and
	// releasing, and the moment each came true).
	renewed    map[string]int64
	releases   map[string]int
	releasedAt map[string]int64
	procOf     map[int]int             // proc -> slot
	crashed    map[int]map[string]bool // proc -> the keys it held when its crash was recorded
	// wrote: the key's holder has written to the protected store since
	// its grant, its work on the resource done: only its release is left.
	wrote map[string]bool
	// waiting: proc -> the key its acquire, asked and not yet answered,
	// is for.
	waiting map[int]string
	wait    chan struct{} // closed and replaced whenever a grant, a holder's write, an acquire asked or a crash is seen
}

func newHolders() *holders {
	return &holders{byKey: map[string]int{}, since: map[string]int64{}, reentered: map[procKey]int{}, renewed: map[string]int64{}, releases: map[string]int{},
		releasedAt: map[string]int64{}, procOf: map[int]int{}, crashed: map[int]map[string]bool{},
		wrote: map[string]bool{}, waiting: map[int]string{}, wait: make(chan struct{})}
}

// holds reports whether proc holds key now, as far as the history shows.
func (h *holders) holds(proc int, key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byKey[key]
	return ok && p == proc
}

// working reports whether proc holds key and has not yet written to the
// protected store under this grant: a pause or a hang there comes before
// the holder's write, which may then be stale (a lost update).
func (h *holders) working(proc int, key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byKey[key]
	return ok && p == proc && !h.wrote[key]
}

// holdsWithin reports whether proc holds key, waiting up to wait for it
// to.
func (h *holders) holdsWithin(proc int, key string, wait time.Duration) bool {
	return h.until(context.Background(), wait, func() bool {
		p, ok := h.byKey[key]
		return ok && p == proc
	})
}

// heldAtCrash waits for proc's crash to be recorded and reports whether it
// held key then.
func (h *holders) heldAtCrash(proc int, key string, wait time.Duration) (bool, error) {
	var held bool
	recorded := h.until(context.Background(), wait, func() bool {
		keys, seen := h.crashed[proc]
		held = keys[key]
		return seen
	})
	if !recorded {
		return false, fmt.Errorf("the crash of process %d was not recorded within %v", proc, wait)
	}
	return held, nil
}

// until waits up to wait (or until ctx ends) for ready, called with h.mu
// held each time the view changes, and reports whether it came true.
func (h *holders) until(ctx context.Context, wait time.Duration, ready func() bool) bool {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		ok, ch := ready(), h.wait
		h.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-ch:
		}
	}
}

// procKey is one process's hold of one key.
type procKey struct {
	proc int
	key  string
}

// holderSlot is key's holder and its slot, if the view has one whose slot
// is known; the caller holds mu.
func (h *holders) holderSlot(key string) (slot, proc int, ok bool) {
	p, held := h.byKey[key]
	s, known := h.procOf[p]
	return s, p, held && known
}

// heldBy reports whether proc holds key in the view; the caller holds mu.
func (h *holders) heldBy(key string, proc int) bool {
	p, ok := h.byKey[key]
	return ok && p == proc
}

// see updates the view with one event.
func (h *holders) see(ev history.Event) {
	if ev.Proc < 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ev.F == history.Acquire || ev.F == history.Crash {
		delete(h.waiting, ev.Proc)
	}
	switch {
	case ev.F == history.Acquire && ev.Type == history.Invoke:
		h.waiting[ev.Proc] = ev.Key
		close(h.wait)
		h.wait = make(chan struct{})
	case ev.F == history.Acquire && ev.Type == history.OK && ev.Reentry && h.heldBy(ev.Key, ev.Proc):
		h.reentered[procKey{ev.Proc, ev.Key}]++
	case ev.F == history.Release && ev.Type == history.Invoke && h.reentered[procKey{ev.Proc, ev.Key}] > 0:
		h.reentered[procKey{ev.Proc, ev.Key}]-- // it gives a re-entry back and holds on
	case ev.F == history.Acquire && ev.Type == history.OK:
		if ev.T < h.since[ev.Key] {
			return
		}
		h.since[ev.Key] = ev.T
		h.byKey[ev.Key] = ev.Proc
		delete(h.wrote, ev.Key)
		delete(h.renewed, ev.Key)
		close(h.wait)
		h.wait = make(chan struct{})
	case ev.F == history.Crash:
		keys := map[string]bool{}
		for k, p := range h.byKey {
			if p == ev.Proc {
				keys[k] = true
				delete(h.byKey, k)
				delete(h.reentered, procKey{p, k})
			}
		}
		h.crashed[ev.Proc] = keys
		close(h.wait)
		h.wait = make(chan struct{})
	case ev.F == history.Extend && ev.Type == history.OK && h.heldBy(ev.Key, ev.Proc):
		h.renewed[ev.Key] = ev.T
		close(h.wait)
		h.wait = make(chan struct{})
	case ev.F == history.Write && ev.Type == history.OK:
		if p, ok := h.byKey[ev.Key]; ok && p == ev.Proc {
			h.wrote[ev.Key] = true
			close(h.wait)
			h.wait = make(chan struct{})
		}
	case ev.F == history.Release && ev.Type == history.Invoke, ev.F == history.Lost:
		if ev.F == history.Release && h.heldBy(ev.Key, ev.Proc) {
			h.releases[ev.Key]++
			h.releasedAt[ev.Key] = ev.T
			close(h.wait)
			h.wait = make(chan struct{})
		}
		for k, p := range h.byKey {
			if p == ev.Proc && (ev.Key == "" || ev.Key == k) {
				delete(h.byKey, k)
				delete(h.reentered, procKey{p, k})
				h.since[k] = max(h.since[k], ev.T)
			}
		}
	}
}

// bind records which slot a process id belongs to.
func (h *holders) bind(proc, slot int) {
	h.mu.Lock()
	h.procOf[proc] = slot
	h.mu.Unlock()
}

// slotOf is the slot process proc ran in.
func (h *holders) slotOf(proc int) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.procOf[proc]
	return s, ok
}

// holderOf returns the slot whose client holds key, waiting up to wait for
// someone to take it.
func (h *holders) holderOf(ctx context.Context, key string, wait time.Duration) (slot, proc int, err error) {
	return h.holderWhere(ctx, key, wait, false)
}

// workingHolderOf is holderOf for a holder that has not written yet
// (working): one that has is passed over until the next grant.
func (h *holders) workingHolderOf(ctx context.Context, key string, wait time.Duration) (slot, proc int, err error) {
	return h.holderWhere(ctx, key, wait, true)
}

func (h *holders) holderWhere(ctx context.Context, key string, wait time.Duration, working bool) (slot, proc int, err error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		s, p, ok := h.holderSlot(key)
		done := working && h.wrote[key]
		ch := h.wait
		h.mu.Unlock()
		if ok && !done {
			return s, p, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-deadline.C:
			return 0, 0, fmt.Errorf("nobody held %s within %v: %w", key, wait, chaos.ErrNoTarget)
		case <-ch:
		}
	}
}

// waiterOf returns the slot of a client waiting for key (the lowest slot
// of those waiting), waiting up to wait for one to ask.
//
// A fault on the waiter's process (onProcess: a pause, hang, crash or
// clock jump) takes it, for the first half of wait, only while another
// client holds key and has not written yet (its work under way, its
// release not near): with the key
// free as locklab sees it, a waiter's grant may be on its way back, and
// the fault would hit a holder (an etcd client paused as its Lock
// returned, its answer not yet read, lost its lease in the pause and was
// recorded granted after it: a known hazard of a paused holder where the
// case meant a waiter). Then any waiter will do: one may wait on a key
// nobody is seen to hold (its holder crashed). A fault on the waiter's
// links takes any waiter at once: a reply lost as the key comes free is
// the acquire that takes effect unseen, which such a fault is there for.
func (h *holders) waiterOf(ctx context.Context, key string, wait time.Duration, onProcess bool) (slot, proc int, err error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	half := time.NewTimer(wait / 2)
	defer half.Stop()
	anyWaiter := !onProcess
	for {
		h.mu.Lock()
		slot, proc = -1, -1
		holder, held := h.byKey[key]
		holderWorks := held && !h.wrote[key]
		for p, k := range h.waiting {
			if s, known := h.procOf[p]; k == key && known && !(held && holder == p) && (slot < 0 || s < slot) {
				slot, proc = s, p
			}
		}
		ch := h.wait
		h.mu.Unlock()
		if slot >= 0 && (holderWorks || anyWaiter) {
			return slot, proc, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-deadline.C:
			return 0, 0, fmt.Errorf("nobody waited for %s within %v: %w", key, wait, chaos.ErrNoTarget)
		case <-half.C:
			anyWaiter = true
		case <-ch:
		}
	}
}

// resolver turns a fault step's selector into targets when it fires.
type resolver struct {
	cl *cluster.Cluster // nil without servers
	// linkBase is added to a slot's index to name its client's own
	// proxies (caseEnv.linkBase).
	linkBase int
	// nodesOf is the case's nodes of a kind: those of its lane.
	nodesOf   func(impls.Server) []*cluster.Node
	server    impls.Server // the case's approach's server kind: the default for node selectors
	keyPrefix string
	slots     []fleet.Slot // the case's clients as faults see them
	holders   *holders
	ownLinks  bool // clients connect through their own proxies: node faults must cover those too
}

// Resolve implements chaos.Resolver.
func (r *resolver) Resolve(ctx context.Context, s chaos.Selector, rng *rand.Rand) ([]chaos.Target, error) {
	switch s.Kind() {
	case chaos.TargetClient:
		c, proc, err := r.client(ctx, s, rng, true)
		if err != nil {
			return nil, err
		}
		t := chaos.Target{Kind: chaos.TargetClient, Name: fmt.Sprintf("client %d", c.Index), Clock: c.Clock}
		if proc >= 0 {
			t.Name = fmt.Sprintf("client %d (process %d)", c.Index, proc)
		}
		if c.Process != nil {
			t.Process = c.Process
			if s.Client == chaos.ClientHolder {
				t.Process = &holderProcess{r: r, key: r.keyName(s.Key), slot: c.Process, proc: proc}
			}
		}
		return []chaos.Target{t}, nil
	case chaos.TargetLink:
		c, _, err := r.client(ctx, s, rng, false)
		if err != nil {
			return nil, err
		}
		nodes, err := r.nodes(ctx, s, rng)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("client %d", c.Index)
		links, err := r.cl.ClientLinks(r.linkBase+c.Index, nodes)
		if err != nil {
			return nil, fmt.Errorf("links of %s: %w", name, err)
		}
		return []chaos.Target{chaos.LinkTarget(name, nodes, links)}, nil
	default:
		nodes, err := r.nodes(ctx, s, rng)
		if err != nil {
			return nil, err
		}
		out := chaos.NodeTargets(nodes)
		if r.ownLinks {
			// Clients reach this node through their own proxies too: a
			// network fault on the node must cut those as well.
			for i := range out {
				for _, c := range r.slots {
					links, err := r.cl.ClientLinks(r.linkBase+c.Index, nodes[i:i+1])
					if err != nil {
						return nil, err
					}
					out[i].Links = append(out[i].Links, links...)
				}
			}
		}
		return out, nil
	}
}

// client picks the slot a selector names, and the process in it (-1 if
// unknown); onProcess says the fault acts on the client's process, not on
// its links (waiterOf).
func (r *resolver) client(ctx context.Context, s chaos.Selector, rng *rand.Rand, onProcess bool) (fleet.Slot, int, error) {
	switch s.Client {
	case chaos.ClientHolder:
		slot, proc, err := r.holders.holderOf(ctx, r.keyName(s.Key), 2*time.Second)
		if err != nil {
			return fleet.Slot{}, 0, err
		}
		return r.slots[slot], proc, nil
	case chaos.ClientWaiter:
		slot, proc, err := r.holders.waiterOf(ctx, r.keyName(s.Key), 2*time.Second, onProcess)
		if err != nil {
			return fleet.Slot{}, 0, err
		}
		return r.slots[slot], proc, nil
	case chaos.ClientRandom:
		return r.slots[rng.IntN(len(r.slots))], -1, nil
	}
	i, err := strconv.Atoi(s.Client)
	if err != nil || i < 0 || i >= len(r.slots) {
		return fleet.Slot{}, 0, fmt.Errorf("client %q: want holder, waiter, random or a number 0..%d", s.Client, len(r.slots)-1)
	}
	return r.slots[i], -1, nil
}

// keyName maps a selector's key ("0", "k0" or a full key) onto the case's key.
func (r *resolver) keyName(k string) string {
	if _, err := strconv.Atoi(k); err == nil {
		return r.keyPrefix + "k" + k
	}
	if strings.HasPrefix(k, r.keyPrefix) {
		return k
	}
	return r.keyPrefix + k
}

// nodes picks the server nodes a selector names, among the case's (its
// lane's) nodes of the selector's server kind, the approach's by default.
func (r *resolver) nodes(ctx context.Context, s chaos.Selector, rng *rand.Rand) ([]*cluster.Node, error) {
	if r.cl == nil {
		return nil, fmt.Errorf("no servers: %w", chaos.ErrNoTarget)
	}
	nodesOf := func(server string) []*cluster.Node { return r.nodesOf(impls.Server(server)) }
	return chaos.ResolveNodes(ctx, nodesOf, string(r.server), s, rng)
}

// holderProcess is the worker of "the client that holds key k". The holder
// may let go between the moment it is picked and the moment a signal
// lands (a 10 ms hold is shorter than a scheduling delay on a loaded
// machine), and a fault aimed at a holder that hit a client holding nothing
// proves nothing. So the signal goes to whoever holds the key right then,
// and a crash is checked against the history afterwards: if its victim had
// already let go, the next holder is crashed too (a crash of a client
// holding nothing is harmless, and recorded like any crash); a pause is
// checked likewise, and moved to the next holder.
type holderProcess struct {
	r    *resolver
	key  string
	slot fleet.Process
	proc int
}

// holderAttempts bounds how many clients a holder crash may take down.
const holderAttempts = 3

// current makes sure p names the key's holder now; with working, one
// that has not written yet under its grant.
func (p *holderProcess) current(working bool) error {
	find := p.r.holders.holderOf
	if working {
		if p.r.holders.working(p.proc, p.key) {
			return nil
		}
		find = p.r.holders.workingHolderOf
	} else if p.r.holders.holds(p.proc, p.key) {
		return nil
	}
	slot, proc, err := find(context.Background(), p.key, 2*time.Second)
	if err != nil {
		return err
	}
	if p.r.slots[slot].Process == nil {
		return fmt.Errorf("client %d has no process: %w", slot, chaos.ErrNoTarget)
	}
	p.slot, p.proc = p.r.slots[slot].Process, proc
	return nil
}

// holderSettle is how long a paused holder's last events get to arrive: a
// release it sent out just before the stop is then on record.
const holderSettle = 50 * time.Millisecond

// Pause stops the key's holder; if the history then shows it had let go
// before the stop landed, it is resumed and the next holder is paused (a
// pause of a client holding nothing proves nothing: seen, a lib-zk-recipe
// client-pause run that never showed its expected double grant).
func (p *holderProcess) Pause() error {
	return p.stopHolder("pause", fleet.Process.Pause, fleet.Process.Resume)
}

// Hang halts the key's holder's own steps, moved to the next holder as a
// pause is when the first had let go before the hang landed.
func (p *holderProcess) Hang() error {
	return p.stopHolder("hang", fleet.Process.Hang, fleet.Process.Unhang)
}

func (p *holderProcess) Unhang() error { return p.slot.Unhang() }

// stopHolder stops the key's holder with stop, and checks the history
// once stop had time to land: a holder that had let go before is let go
// on with undo, and the next holder is stopped instead. So is one whose
// write to the protected store had landed: stopped between its write and
// its release, it outlives its lease but writes nothing stale, and the
// lost update the pause or hang is there to show cannot follow (seen: 2
// of 66 client-hang runs, the hang 0.5 ms after a holder's write).
func (p *holderProcess) stopHolder(what string, stop, undo func(fleet.Process) error) error {
	for range holderAttempts {
		if err := p.current(true); err != nil {
			return err
		}
		if err := stop(p.slot); err != nil {
			return err
		}
		time.Sleep(holderSettle)
		if p.r.holders.working(p.proc, p.key) {
			return nil
		}
		if err := undo(p.slot); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: each of %d holders let go before its %s landed: %w", p.key, holderAttempts, what, chaos.ErrNoTarget)
}

func (p *holderProcess) Resume() error { return p.slot.Resume() }

// Kill crashes the key's holder. It hangs the holder first (its release
// then waits) and kills it once the history shows it holding: a kill aimed
// by the history alone, which a loaded machine records late, can land
// after the holder's release, or inside its next acquire, granted by the
// server and not yet on record; the lock then stays with a dead process
// the history says holds nothing (seen in CI: redis-setnx under
// holder-crash, "nobody held k0 within 2s" on the next try). A hung
// holder that had let go holds again at its next grant.
func (p *holderProcess) Kill() error {
	for range holderAttempts {
		if err := p.current(false); err != nil {
			return err
		}
		if err := p.slot.Hang(); err != nil {
			return err
		}
		time.Sleep(holderSettle)
		if !p.r.holders.holdsWithin(p.proc, p.key, holderRegrant) {
			if err := p.slot.Unhang(); err != nil {
				return err
			}
			continue
		}
		if err := p.slot.Kill(); err != nil {
			return err
		}
		held, err := p.r.holders.heldAtCrash(p.proc, p.key, 10*time.Second)
		if err != nil || held {
			return err
		}
	}
	return fmt.Errorf("%s: each of %d holders let go before its crash landed: %w", p.key, holderAttempts, chaos.ErrNoTarget)
}

// holderRegrant is how long a hung holder that had let go gets to be
// granted the key again before the next holder is taken instead.
const holderRegrant = 2 * time.Second

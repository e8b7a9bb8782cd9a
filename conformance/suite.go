// Package conformance is the one suite every lock approach passes against
// its real server. Each test states a promise (or, for a capability the
// approach does not declare, leaves it alone) and can fail.
package conformance

import (
	"testing"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
)

// Fault is what the suite needs of a chaos fault.
type Fault interface {
	Inject(ctx context.Context) error
	Heal(ctx context.Context) error
}

// Harness connects the suite to one approach on a running cluster.
type Harness struct {
	Approach  impls.Approach
	Endpoints impls.Endpoints
	// DirectEndpoints reach the servers without the proxies, for clients
	// that must not feel a fault injected for another.
	DirectEndpoints impls.Endpoints
	// DropReplies makes the approach's servers apply requests while their
	// replies never arrive.
	DropReplies Fault
	// SlowReplies delays replies (by 400 ms) while requests still arrive.
	SlowReplies Fault
	// Partition cuts the client off from the servers both ways.
	Partition Fault
	// Nodes are the servers of the approach's server kind, for crash tests.
	Nodes []Node
	// Contenders is the number of clients in the mutual exclusion test (16).
	Contenders int
}

// Node is what the suite needs of a server: kill it and bring it back.
type Node interface {
	Kill() error
	Restart(ctx context.Context) error
}

// Run runs every test that applies to h.Approach as subtests of t: its
// declared capabilities must hold, and each declared weakness must show.
func Run(t *testing.T, h Harness) { RunT(testingT{t}, h) }

// RunT is Run on any T: locklab's own runner (Standalone) is one.
func RunT(t T, h Harness) {
	if h.Contenders == 0 {
		h.Contenders = 16
	}
	s := &suite{h: h, prefix: "conf-" + randomHex(4) + "-"}
	// Every promise shows in `go test -v`: the tests that do not apply to
	// this approach are listed as skipped, with the declaration that rules
	// them out (impls/all pins the declarations).
	for _, c := range s.checks() {
		if c.applies {
			t.Run(c.name, c.run)
			continue
		}
		why := c.why
		t.Run(c.name, func(t T) { t.Skip(why) })
	}
}

// check is one test of the suite: docs/conform.md says what each asserts.
type check struct {
	name    string
	applies bool
	why     string // why it does not apply
	run     func(T)
}

// checks are the suite's tests in the order they run.
func (s *suite) checks() []check {
	a, w := s.h.Approach, s.h.Approach.Weak
	always := func(name string, f func(T)) check { return check{name: name, applies: true, run: f} }
	only := func(cond bool, name, why string, f func(T)) check {
		return check{name: name, applies: cond, why: why, run: f}
	}
	return []check{
		only(w.RacyAcquire, "RacyAcquireShowsDoubleGrant", "not declared racy", s.racyAcquireShowsDoubleGrant),
		only(a.Safe && !w.RacyAcquire, "MutualExclusion", "not declared safe", s.mutualExclusion),
		only(w.ReleaseNotOwnerChecked, "StaleReleaseDeletesOthersLock", "release declared owner-checked", s.staleReleaseDeletesOthersLock),
		only(!w.ReleaseNotOwnerChecked, "NonOwnerReleaseRefused", "declared weak: release not owner-checked", s.nonOwnerReleaseRefused),
		always("TryDoesNotWait", s.tryDoesNotWait),
		always("CancelReturnsPromptly", s.cancelReturnsPromptly),
		always("TimeoutIsIndeterminate", s.timeoutIsIndeterminate),
		only(a.Caps.TTL, "CrashedHolderFreedAfterTTL", "no TTL declared", s.crashedHolderFreedAfterTTL),
		// A watchdog keeps a live holder's lease: no holder outlives it here.
		only(a.Caps.TTL && !a.Caps.Watchdog && !w.ReleaseNotOwnerChecked && !w.ReleaseCheckNotAtomic, "ExpiredHolderReleaseRefused",
			"no TTL, or a watchdog keeps live holders' leases, or release declared not owner-checked or not atomic", s.expiredHolderReleaseRefused),
		only(a.Caps.TTL, "ValidUntilOnTheClientsClock", "no TTL declared", s.validUntilOnTheClientsClock),
		only(a.CrashFreedAfter > 0, "CrashedHolderFreedAfterSession", "no session timeout declared", s.crashedHolderFreedAfterSession),
		only(a.Caps.FreedOnDisconnect, "CrashedHolderFreedOnDisconnect", "not declared freed on disconnect", s.crashedHolderFreedOnDisconnect),
		only(w.NoExpiry, "CrashedHolderBlocksForever", "not declared without expiry", s.crashedHolderBlocksForever),
		only(w.ReapsLiveHolder, "LiveHolderReaped", "not declared to reap live holders", s.liveHolderReaped),
		only(a.Caps.Reentrant, "ReentrantAcquire", "not declared reentrant", s.reentrantAcquire),
		only(!a.Caps.Reentrant, "ReentryRefused", "declared reentrant", s.reentryRefused),
		only(w.ReleaseCheckNotAtomic, "SlowReleaseDeletesNextHoldersLock", "release declared atomic", s.slowReleaseDeletesNextHoldersLock),
		only(a.Caps.Fair, "FairGrantOrder", "not declared fair", s.fairGrantOrder),
		only(a.Caps.LossSignal, "LossSignalled", "no loss signal declared", s.lossSignalled),
		only(a.Caps.Blocking, "BlockingHandOff", "not declared blocking (waiters poll)", s.blockingHandOff),
		only(a.Caps.Renewal, "ExtendKeepsTheLock", "no renewal declared", s.extendKeepsTheLock),
		only(!a.Caps.Renewal, "ExtendUnsupported", "renewal declared", s.extendUnsupported),
		only(a.Caps.Watchdog, "WatchdogKeepsTheLock", "no watchdog declared", s.watchdogKeepsTheLock),
		only(a.Caps.Watchdog, "WatchdogStopsAtRelease", "no watchdog declared", s.watchdogStopsAtRelease),
		only(a.Caps.Fencing, "FencingTokensIncrease", "no fencing declared", s.fencingTokensIncrease),
		only(a.Caps.FaultTolerant, "SurvivesMinorityLoss", "not declared fault-tolerant", s.survivesMinorityLoss),
		always("InvalidKeyRejected", s.invalidKeyRejected),
		// Last: it restarts every server of its kind.
		always("ServerDownIsUnavailable", s.serverDownIsUnavailable),
	}
}

type suite struct {
	h      Harness
	prefix string
	// firstPause is how long a new client that could not reach its
	// servers waits before it is asked for again (doubled each time;
	// 0: a second).
	firstPause time.Duration
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// key returns a key unique to this test run, so reruns against a server
// with leftovers (a MySQL table, say) do not collide.
func (s *suite) key(t T) string { return s.prefix + path.Base(t.Name()) }

func (s *suite) locker(t T, id int) impls.Locker {
	t.Helper()
	return s.lockerAt(t, id, s.h.Endpoints)
}

// directLocker is a client that bypasses the proxies.
func (s *suite) directLocker(t T, id int) impls.Locker {
	t.Helper()
	return s.lockerAt(t, id, s.h.DirectEndpoints)
}

func (s *suite) lockerAt(t T, id int, ep impls.Endpoints) impls.Locker {
	t.Helper()
	return s.lockerWithClock(t, id, ep, &clock.Skewable{})
}

// lockerWithClock is a client whose lease clock is clk. One that could
// not reach its servers, or whose set-up call went unanswered (zk-sequential's
// create of its root: "indeterminate: context deadline exceeded" in starved
// containers), is asked for again, five times at most, 1, 2, 4
// and 8 s apart: a ZooKeeper container starved with both cores busy gave
// a new client no session within 10 s, and five Redis containers answered
// no ping for most of a minute, which says nothing of the lock. A try
// lasts 10 s, or the approach's own start-timeout when longer: an
// adapter's first start that compiles (curator-mutex's javac, beside the
// suite) killed after 10 s compiled again at each of the five tries.
func (s *suite) lockerWithClock(t T, id int, ep impls.Endpoints, clk clock.Clock) impls.Locker {
	t.Helper()
	l, err := s.newClient(t, id, ep, clk)
	if err != nil {
		t.Fatalf("new %s client: %v", s.h.Approach.Name, err)
	}
	c := &closeOnce{Locker: l}
	t.Cleanup(func() { c.Close() })
	return c
}

// newClient makes client id, asking again as lockerWithClock says.
func (s *suite) newClient(t T, id int, ep impls.Endpoints, clk clock.Clock) (impls.Locker, error) {
	pause := s.firstPause
	if pause == 0 {
		pause = time.Second
	}
	each := max(10*time.Second, s.h.Approach.StartTimeout)
	for try := 1; ; try, pause = try+1, 2*pause {
		ctx, cancel := context.WithTimeout(context.Background(), each)
		l, err := s.h.Approach.New(ctx, impls.Env{Endpoints: ep, Clock: clk, ClientID: id})
		cancel()
		if err == nil || !connectionLost(err) || try == 5 {
			return l, err
		}
		t.Logf("new %s client, try %d: %v: again in %v", s.h.Approach.Name, try, err, pause)
		time.Sleep(pause)
	}
}

// closeOnce is a client a test may close before its cleanup does.
type closeOnce struct {
	impls.Locker
	once sync.Once
	err  error
}

func (c *closeOnce) Close() error {
	c.once.Do(func() { c.err = c.Locker.Close() })
	return c.err
}

// replacement closes a contender whose answer was lost (ending its
// session, and with it any hold it had) and returns a new client in its
// place under the next process id, made as newClient makes one: a
// starved machine gave 16 Python clients' replacements no start in 10 s.
func (s *suite) replacement(t T, next *atomic.Int64, old impls.Locker) (impls.Locker, int, error) {
	old.Close()
	id := int(next.Add(1) - 1)
	l, err := s.newClient(t, id, s.h.Endpoints, &clock.Skewable{})
	if err != nil {
		return nil, 0, fmt.Errorf("a new %s client in place of one whose answer was lost: %w", s.h.Approach.Name, err)
	}
	return &closeOnce{Locker: l}, id, nil
}

// acquire takes key for a step the test builds on. An answer of
// "unavailable" (the client not connected: a kazoo session SUSPENDED beside
// two busy loops, a Curator client not yet connected on an idle machine)
// says nothing took effect, and is asked again on the same key, three
// times at most, a moment apart. An indeterminate answer is not: it may
// have taken the key.
func acquire(t T, l impls.Locker, key string, opt impls.AcquireOptions) impls.Lease {
	t.Helper()
	giveUp := time.Now().Add(unavailableFor)
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lease, err := l.Acquire(ctx, key, opt)
		cancel()
		if err == nil {
			return lease
		}
		if time.Now().After(giveUp) || !errors.Is(err, impls.ErrUnavailable) || errors.Is(err, impls.ErrIndeterminate) {
			t.Fatalf("acquire %s, try %d: %v", key, try, err)
		}
		t.Logf("acquire %s, try %d: %v: again", key, try, err)
		time.Sleep(min(time.Duration(try)*500*time.Millisecond, 2*time.Second))
	}
}

// unavailableFor is how long a client may answer "unavailable" while it
// finds a live server: a ZooKeeper client whose server was killed may need
// a new session first, which a starved machine slows by seconds.
const unavailableFor = 10 * time.Second

func release(t T, lease impls.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := releaseSettled(ctx, lease)
	// The lock told its holder it was gone (a ZooKeeper session expired
	// while a starved machine kept its pings back): "not held" is then
	// what a release must answer. The signal may come just after the
	// answer: go-zookeeper hands the expiry to its event loop while the
	// delete goes out on the new session.
	if errors.Is(err, impls.ErrNotHeld) && signalled(lease, lossSignalLag) {
		t.Logf("release %s after the lock signalled its loss: %v", lease.Key(), err)
		return
	}
	if err != nil {
		t.Fatalf("release %s: %v", lease.Key(), err)
	}
}

// lossSignalLag is how long after a release answered "not held" its
// lease's loss signal may still come.
const lossSignalLag = time.Second

// signalled reports whether the lease's loss signal fired, or fires
// within lag.
func signalled(lease impls.Lease, lag time.Duration) bool {
	lost := lease.Lost()
	if lost == nil {
		return false
	}
	select {
	case <-lost:
		return true
	case <-time.After(lag):
		return false
	}
}

// releaseSettled releases a lease the way a careful caller does: a release
// whose outcome is unknown (a connection dropped mid-request, as happens to
// a ZooKeeper client whose 2 s session misses pings on a loaded machine) is
// tried again until its outcome is known or ctx ends, and so is one that
// could not reach the server (unavailable: a ZooKeeper client reconnecting
// after its connection dropped).
// After such a try, "not held" means that earlier try took effect, or the
// lock went as the approach frees it while its holder could not reach the
// server (its session or TTL ran out). The tests that are about
// indeterminate outcomes call Release themselves.
func releaseSettled(ctx context.Context, lease impls.Lease) error {
	err := lease.Release(ctx)
	for retried := false; ; retried = true {
		switch {
		case retried && errors.Is(err, impls.ErrNotHeld):
			return nil
		case !errors.Is(err, impls.ErrIndeterminate) && !errors.Is(err, impls.ErrUnavailable):
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
		err = lease.Release(ctx)
	}
}

func tryAcquire(l impls.Locker, key string) (impls.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.Acquire(ctx, key, impls.AcquireOptions{Try: true})
}

// tryHeld tries key, which another client holds, until the try is
// answered (three times at most): a try whose answer was lost (a ZooKeeper
// connection closed, a Redis read timing out in a starved container) says
// nothing of whether the key is held, and on a held key it cannot have
// taken it. It returns how long the last try took and its error.
func tryHeld(t T, l impls.Locker, key string) (time.Duration, error) {
	t.Helper()
	for try := 1; ; try++ {
		start := time.Now()
		_, err := tryAcquire(l, key)
		took := time.Since(start)
		if try == 3 || !errors.Is(err, impls.ErrIndeterminate) && !errors.Is(err, impls.ErrUnavailable) {
			return took, err
		}
		t.Logf("a try on the held key, %d: %v: again", try, err)
	}
}

// roundTrip times one try on a key another client holds: the server's
// answer time as the machine is loaded right now. A try that did not reach
// the server (unavailable, or its answer lost) times nothing and is made
// again, as tryHeld does.
func roundTrip(t T, l impls.Locker, key string) time.Duration {
	t.Helper()
	took, err := tryHeld(t, l, key)
	if !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("try on a held key: err = %v, want ErrNotAcquired", err)
	}
	return took
}

// contend has the contenders hammer one key for up to cycles each (or
// until stop returns true) and returns the most clients seen inside the
// critical section at once and the checker's double grants.
//
// A contention that saw nothing wrong but completed too few cycles because
// answers were lost (its clients replaced: a starved machine left every
// Redlock round past its node timeout for most of a minute) is run again
// on a new key, twice at most; one that saw anything wrong is judged.
func (s *suite) contend(t T, cycles int, stop func(maxInside int32) bool) (int32, []checker.DoubleGrant, *checker.Mutex) {
	for try := 1; ; try++ {
		key := s.key(t)
		if try > 1 {
			key = fmt.Sprintf("%s-%d", key, try)
		}
		c := s.contendOn(t, key, cycles, stop)
		n, want, few := c.tooFew()
		clean := len(c.errs) == 0 && c.maxInside.Load() <= 1 && len(c.check.DoubleGrants()) == 0
		if few && clean && c.replaced.Load()+c.lost.Load() > 0 && try < 3 {
			t.Logf("try %d: %d of %d cycles completed (%d clients replaced after lost answers, %d cycles lost to a server too slow to answer), nothing wrong seen: again on a new key",
				try, n, want, c.replaced.Load(), c.lost.Load())
			continue
		}
		c.judge()
		return c.maxInside.Load(), c.check.DoubleGrants(), c.check
	}
}

// contendOn runs one contention on key.
func (s *suite) contendOn(t T, key string, cycles int, stop func(maxInside int32) bool) *contention {
	c := &contention{t: t, s: s, key: key, cycles: cycles, stop: stop, mono: clock.NewMonotonic(), check: checker.NewMutex(checker.ModelLease)}
	lockers := make([]impls.Locker, s.h.Contenders)
	for i := range lockers {
		lockers[i] = s.locker(t, i)
	}
	c.errs = make(chan error, s.h.Contenders)
	c.nextProc.Store(int64(len(lockers)))
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Add(1)
		go func(proc int, l impls.Locker) {
			defer wg.Done()
			c.contender(proc, l)
		}(i, l)
	}
	wg.Wait()
	c.contenders = len(lockers)
	return c
}

// contention is one contend: its contenders, what they saw, and the
// checker over the history they recorded.
type contention struct {
	t      T
	s      *suite
	key    string
	cycles int
	stop   func(maxInside int32) bool
	mono   *clock.Monotonic
	// contenders is how many contended (replacements not counted).
	contenders int

	inside, maxInside   atomic.Int32
	nextProc            atomic.Int64 // the process id of the next replacement
	replaced, completed atomic.Int32
	// lost counts cycles a server too slow to answer cost: acquires
	// refused at their deadline or unable to reach it, releases that
	// could not be made.
	lost atomic.Int32
	errs chan error

	mu    sync.Mutex // guards check and index
	check *checker.Mutex
	index int64
}

// record adds one event to the checker's history.
func (c *contention) record(proc int, typ history.Type, f string, lease impls.Lease) {
	ev := history.Event{Proc: proc, Type: typ, F: f, Key: c.key, T: c.mono.Nanos()}
	if lease != nil {
		if tok, ok := lease.Token(); ok {
			ev.Token = &tok
		}
	}
	c.mu.Lock()
	ev.Index = c.index
	c.check.Add(ev)
	c.index++
	c.mu.Unlock()
}

// contender runs one contender's cycles (acquire, a moment inside,
// release) until they are done, stop says so, or it fails.
func (c *contention) contender(proc int, l impls.Locker) {
	defer func() { l.Close() }() // the last replacement's; the first's cleanup would too
	for n := 0; n < c.cycles && !c.stop(c.maxInside.Load()); n++ {
		lease, err := c.acquire(proc, l)
		if errors.Is(err, impls.ErrIndeterminate) {
			next, id, ok := c.replace(proc, l, err)
			if !ok {
				return
			}
			l, proc = next, id
			continue
		}
		if errors.Is(err, impls.ErrNotAcquired) || errors.Is(err, impls.ErrUnavailable) {
			// Refused while waiting (a ZooKeeper session that expired
			// under a loaded machine took the waiter's queue node with
			// it; a semi-synchronous MariaDB's commits waiting on a
			// starved replica ran the acquire to its deadline), or no
			// server reached: nothing is held; the cycle is lost (too few
			// completed still fails) and the next one asks again.
			c.t.Logf("contender %d refused: %v", proc, err)
			c.lost.Add(1)
			continue
		}
		if err != nil {
			c.errs <- err
			return
		}
		c.inCritical()
		if err := c.release(proc, lease); err != nil {
			if !errors.Is(err, impls.ErrNotAcquired) && !errors.Is(err, impls.ErrUnavailable) {
				c.errs <- err
				return
			}
			// Three releases that did nothing (their deadlines ran out
			// before the server took them, or it could not be reached):
			// the contender retires still holding, left to its TTL or
			// session, as a crashed one is.
			c.t.Logf("contender %d retired: %v", proc, err)
			c.lost.Add(1)
			return
		}
		c.completed.Add(1)
	}
}

// acquire takes the lock as proc, recording the call and its outcome. An
// indeterminate one (the server's answer was lost: a ZooKeeper session
// expired on a loaded machine) may have taken effect, and the checker is
// told so.
func (c *contention) acquire(proc int, l impls.Locker) (impls.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c.record(proc, history.Invoke, history.Acquire, nil)
	lease, err := l.Acquire(ctx, c.key, impls.AcquireOptions{TTL: 30 * time.Second})
	cancel()
	switch {
	case errors.Is(err, impls.ErrIndeterminate):
		c.record(proc, history.Info, history.Acquire, nil)
	case err != nil:
		c.record(proc, history.Fail, history.Acquire, nil)
	default:
		c.record(proc, history.OK, history.Acquire, lease)
	}
	return lease, err
}

// replace gives proc, whose acquire came back indeterminate, a new client
// under a new process id, as the lab's own clients are (Jepsen's rule);
// closing the old one ends its hold, if it had one. false: no new client
// could reach the server (a starved one), and this contender retires; too
// few cycles left fail the test.
func (c *contention) replace(proc int, l impls.Locker, lost error) (impls.Locker, int, bool) {
	c.t.Logf("contender %d replaced: %v", proc, lost)
	c.replaced.Add(1)
	next, id, err := c.s.replacement(c.t, &c.nextProc, l)
	if err != nil {
		c.t.Logf("contender %d retired: %v", proc, err)
		return nil, 0, false
	}
	return next, id, true
}

// inCritical is a holder's moment inside the critical section, counted.
func (c *contention) inCritical() {
	n := c.inside.Add(1)
	for {
		m := c.maxInside.Load()
		if n <= m || c.maxInside.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(200 * time.Microsecond)
	c.inside.Add(-1)
}

// release releases proc's lease, recording the call and its success. A
// release that did nothing before its deadline (a semi-synchronous
// MariaDB's central row held by commits waiting on a starved replica) is
// made again, three times at most.
func (c *contention) release(proc int, lease impls.Lease) error {
	c.record(proc, history.Invoke, history.Release, nil)
	var err error
	for try := 1; try <= 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = releaseSettled(ctx, lease)
		cancel()
		if !errors.Is(err, impls.ErrNotAcquired) {
			break
		}
		c.t.Logf("contender %d's release, try %d, did nothing: %v", proc, try, err)
	}
	if err != nil && !errors.Is(err, impls.ErrNotHeld) {
		return err
	}
	c.record(proc, history.OK, history.Release, nil)
	return nil
}

// tooFew reports whether the contenders completed too few cycles to judge
// (fewer than half, unless stop ended them): judged on what was granted,
// since a replaced client's cycle is not made up, so a run whose answers
// were mostly lost saw too little.
func (c *contention) tooFew() (n, want int32, few bool) {
	n, want = c.completed.Load(), int32(c.contenders*c.cycles)
	return n, want, !c.stop(c.maxInside.Load()) && 2*n < want
}

// judge fails the test for the contenders' errors, and for too few
// cycles completed.
func (c *contention) judge() {
	close(c.errs)
	for err := range c.errs {
		c.t.Errorf("contender: %v", err)
	}
	if n, want, few := c.tooFew(); few {
		c.t.Errorf("%d of %d cycles completed (%d clients replaced after lost answers): too few to judge", n, want, c.replaced.Load())
	}
}

// mutualExclusion: contenders hammer one key; at no time do two hold it,
// judged twice: by a shared counter inside the critical section and by the
// checker over the recorded history. Where the approach hands out fencing
// tokens, they must increase in grant order under this contention too (a
// sequential test cannot see a token taken before a wait).
func (s *suite) mutualExclusion(t T) {
	maxInside, grants, check := s.contend(t, 15, func(int32) bool { return false })
	if maxInside > 1 {
		t.Errorf("%d clients were inside the critical section at once", maxInside)
	}
	for _, d := range grants {
		t.Errorf("double grant: %s", d.Describe(check.Origin()))
	}
	if s.h.Approach.Caps.Fencing {
		for _, v := range checker.TokenOrder(check) {
			t.Errorf("fencing: %s", v.Text)
		}
	}
}

// racyAcquireShowsDoubleGrant: a negative control. Check-then-set must let
// two clients in under plain contention, and the checker must see it,
// within a bounded number of attempts.
func (s *suite) racyAcquireShowsDoubleGrant(t T) {
	deadline := time.Now().Add(20 * time.Second)
	_, grants, check := s.contend(t, 500, func(maxInside int32) bool { return maxInside > 1 || time.Now().After(deadline) })
	if len(grants) == 0 {
		t.Fatal("no double grant in 16 x 500 contended cycles: the lab failed to catch the race")
	}
	t.Logf("caught %d double grants, e.g. %s", len(grants), grants[0].Describe(check.Origin()))
}

// nonOwnerReleaseRefused: a client whose tenure has ended cannot release
// the next holder's lock.
func (s *suite) nonOwnerReleaseRefused(t T) {
	key := s.key(t)
	a, b, c := s.locker(t, 1), s.locker(t, 2), s.locker(t, 3)
	stale := acquire(t, a, key, impls.AcquireOptions{})
	release(t, stale)
	held := acquire(t, b, key, impls.AcquireOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stale.Release(ctx); !errors.Is(err, impls.ErrNotHeld) {
		t.Fatalf("release by a former holder: err = %v, want ErrNotHeld", err)
	}
	if _, err := tryHeld(t, c, key); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("after the refused release the lock must still be held: err = %v", err)
	}
	release(t, held)
	if err := held.Release(ctx); !errors.Is(err, impls.ErrNotHeld) {
		t.Fatalf("second release: err = %v, want ErrNotHeld", err)
	}
}

// tryDoesNotWait: a try on a held key is refused without waiting. How
// long a refusal may take is what the server's answers take right now: a
// second, or four times the holder's own acquire of the free key when
// that took longer (a JVM adapter's try answered in 1.07 s beside two busy
// loops). A try that waits out a lock-wait timeout of its own (GET_LOCK
// with a second) still takes longer than its server's answer.
func (s *suite) tryDoesNotWait(t T) {
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	start := time.Now()
	held := acquire(t, a, key, impls.AcquireOptions{})
	answer := time.Since(start)
	d, err := tryHeld(t, b, key)
	if !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("try on a held key: err = %v, want ErrNotAcquired", err)
	}
	if bound := max(time.Second, 4*answer); d > bound {
		t.Fatalf("try took %v, more than %v (the holder's acquire of the free key took %v)", d, bound, answer)
	}
	release(t, held)
	release(t, acquire(t, b, key, impls.AcquireOptions{Try: true}))
}

// cancelReturnsPromptly: a waiter whose context ends gives up at once.
func (s *suite) cancelReturnsPromptly(t T) {
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	// The pace and b's connection first: beside two busy loops their
	// clients' start took longer than a py-etcd3-lock holder's 10 s
	// lease, which ran out before b asked.
	server := s.watchPace(t, key+"-pace")
	defer server.stop()
	release(t, setUpHold(t, b, key+"-warm", impls.AcquireOptions{}, "the waiter's warm-up"))
	held := acquire(t, a, key, impls.AcquireOptions{})
	defer release(t, held)
	// A first try connects b: on a loaded machine a dial alone can outlast
	// the deadline below, and a dial cut short is "unavailable", which
	// says nothing about how a waiter gives up. Nor does a try whose answer
	// was lost (a Redis read timing out after 3 s in a starved container).
	_, err := tryHeld(t, b, key)
	if !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("try on a held key: err = %v, want ErrNotAcquired", err)
	}
	// The slack is relative to the machine's pace: a second try, on a
	// connected client, is one round trip as the server answers now. It
	// is capped at 1 s, so a client that ignores its context cannot buy
	// itself a wide slack with a slow try.
	rtt := roundTrip(t, b, key)
	slack := min(max(250*time.Millisecond, 4*rtt), time.Second)
	const wait = 200 * time.Millisecond
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	stalls := stall.NewWatch(wctx)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	_, err = b.Acquire(ctx, key, impls.AcquireOptions{})
	took := time.Since(start)
	// The time this process stood still meanwhile is the machine's, not
	// the client's: a client that ignores its context waits far longer.
	still := stalls.Within(start, start.Add(took))
	if err == nil {
		if v := held.ValidUntil(); !v.IsZero() && v.Before(time.Now()) {
			t.Fatalf("acquired the key after its holder's lease ran out (valid until %v, %v before): the test took too long to say anything", v, time.Since(v))
		}
		t.Fatal("acquired a held lock")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if !errors.Is(err, impls.ErrNotAcquired) && !errors.Is(err, impls.ErrIndeterminate) {
		t.Errorf("err = %v, want ErrNotAcquired or ErrIndeterminate", err)
	}
	// So is the server's: a client may wait out a call the server is
	// late to answer (its container starved: round trips of 1.2 s at a
	// load of 16), which the pace's own round trips show.
	slow := server.lateWithin(start, start.Add(took))
	if took > wait+slack+still+slow {
		// The server's pace may have changed meanwhile (its container
		// starved): a round trip as it answers now counts too.
		rtt = max(rtt, roundTrip(t, b, key))
		slack = min(max(250*time.Millisecond, 4*rtt), time.Second)
	}
	if took > wait+slack+still+slow {
		t.Errorf("returned %v after a %v deadline (slack %v: 4 round trips of %v, between 250ms and 1s; this process still for %v, the server's round trips late by %v)", took, wait, slack, rtt, still, slow)
	}
}

// timeoutIsIndeterminate: when the replies are lost the client must not
// claim the acquire failed unless it can prove nothing took effect. It says
// "indeterminate" (the lock then held or free: a single write took it, an
// acquire of several commands may have lost a reply before its deciding
// one), or "not acquired" when its transaction provably rolled back, in
// which case the lock must be free once the network heals.
func (s *suite) timeoutIsIndeterminate(t T) {
	if s.h.DropReplies == nil {
		t.Fatal("harness has no DropReplies fault")
	}
	key := s.key(t)
	a := s.locker(t, 1)
	bg := context.Background()
	// One cycle first, on another key: connections open, scripts cached
	// (a cold EVALSHA answers NOSCRIPT and changes nothing, and that
	// answer is what gets lost), as in a client that has been running.
	// A warm-up is set-up: a kazoo client's session LOST beside two busy
	// loops answered it "unavailable".
	release(t, setUpHold(t, a, key+"-warm", impls.AcquireOptions{}, "the warm-up"))
	if err := s.h.DropReplies.Inject(bg); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := s.h.DropReplies.Heal(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer heal()
	ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
	defer cancel()
	// Racy and quorum approaches get a short TTL: their indeterminate
	// outcome proves nothing about the key, only that it comes free.
	ap := s.h.Approach
	loose := ap.Weak.RacyAcquire || ap.Caps.FaultTolerant
	ttl := 30 * time.Second
	if loose {
		ttl = 2 * time.Second
	}
	_, err := a.Acquire(ctx, key, impls.AcquireOptions{TTL: ttl})
	heal()
	b := s.locker(t, 2)
	switch {
	case errors.Is(err, impls.ErrNotAcquired), errors.Is(err, impls.ErrUnavailable):
		// The claim "nothing took effect" must hold: the lock comes free
		// (a server may take a moment to notice the dropped connection).
		// Unavailable is such a claim too: an acquire of two calls
		// (python-etcd3's lease, then its deciding transaction) whose
		// first reply was lost never sent the second. A lock the claim
		// hid stays held for its 30 s TTL; 10 s tells it from a starved
		// server that b cannot reach at once.
		wctx, wcancel := context.WithTimeout(bg, 10*time.Second)
		defer wcancel()
		lease, err := b.Acquire(wctx, key, impls.AcquireOptions{TTL: 30 * time.Second})
		if err != nil {
			t.Fatalf("the acquire was reported as certainly failed, yet the lock stayed held: %v", err)
		}
		release(t, lease)
	case errors.Is(err, impls.ErrIndeterminate):
		if loose {
			// Check-then-set only read before the fault; a quorum
			// approach unlocked every node after the failed round, and
			// those unlocks reached the servers too; a session approach
			// may hold the key until its session ends. Whatever took
			// effect, once a is gone the lock must come free within its
			// TTL or session timeout: an indeterminate acquire leaves at
			// worst a lock that expires, never one held for ever.
			// b's acquire that went unanswered (indeterminate: starved
			// containers left a ZooKeeper create without a reply past the
			// freeing time) says nothing of the lock, and a new client
			// asks again; one refused at its deadline saw the lock held.
			a.Close()
			for try := 1; ; try++ {
				wctx, wcancel := context.WithTimeout(bg, ttl+ap.CrashFreedAfter+3*time.Second)
				lease, err := b.Acquire(wctx, key, impls.AcquireOptions{TTL: ttl})
				wcancel()
				if err == nil {
					release(t, lease)
					return
				}
				if !errors.Is(err, impls.ErrIndeterminate) || try == 3 {
					t.Fatalf("after an indeterminate acquire by a client now gone, the lock never came free (try %d): %v", try, err)
				}
				t.Logf("b's acquire, try %d, went unanswered: %v; a new client asks again", try, err)
				b.Close()
				b = s.locker(t, 2+try)
			}
		}
		// Either state is honest: the single command that takes the lock
		// ran and the key is held, or an acquire of several commands (a
		// reap before the insert, an INCR before the SET NX) lost the
		// first one's reply and never sent the one that decides.
		lease, err := tryAcquire(b, key)
		switch {
		case err == nil:
			t.Logf("the indeterminate acquire had not taken the lock (its deciding command was never sent)")
			release(t, lease)
		case !errors.Is(err, impls.ErrNotAcquired):
			t.Fatalf("try after an indeterminate acquire: err = %v, want granted or ErrNotAcquired", err)
		}
	default:
		t.Fatalf("acquire with replies dropped: err = %v, want ErrIndeterminate (or a provable ErrNotAcquired or ErrUnavailable)", err)
	}
}

// crashedHolderFreedAfterTTL: a holder that vanishes without releasing
// blocks others for about one TTL, no less, not much more.
func (s *suite) crashedHolderFreedAfterTTL(t T) {
	const ttl = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stalls := stall.NewWatch(ctx)
	server := s.watchPace(t, s.key(t)+"-pace")
	defer server.stop()
	for try := 1; ; try++ {
		key := fmt.Sprintf("%s-%d", s.key(t), try)
		a, b := s.locker(t, 2*try-1), s.locker(t, 2*try)
		start := time.Now()
		lease := acquire(t, a, key, impls.AcquireOptions{TTL: ttl})
		granted := time.Since(start)
		if vu := lease.ValidUntil(); vu.IsZero() || vu.After(time.Now().Add(ttl)) {
			t.Errorf("ValidUntil = %v, want within one TTL from now", vu)
		}
		a.Close() // crash: no release
		waitFrom := time.Since(start)
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		lease2, err := b.Acquire(wctx, key, impls.AcquireOptions{TTL: ttl})
		wcancel()
		took := time.Since(start)
		still, slow := stalls.Within(start, start.Add(took)), server.lateWithin(start, start.Add(took))
		if err != nil {
			// A waiter's request unanswered past its read timeout ("i/o
			// timeout" from a container at a load of 17) asked nothing of
			// the lock when this process or the server stood still for half
			// a TTL meanwhile: the check is made again on a new key.
			if try < 3 && connectionLost(err) && still+slow >= ttl/2 {
				t.Logf("try %d: acquire %s: %v, this process still for %v, the server's round trips late by %v: again", try, key, err, still, slow)
				continue
			}
			t.Fatalf("acquire %s after its holder crashed: %v (this process still for %v, the server's round trips late by %v)", key, err, still, slow)
		}
		// Never before the TTL (that would free a live holder), and not much
		// after it: a second for the waiter's polling, plus a few times the
		// acquire's own round trip, which a loaded machine stretches, and
		// however long this process or the server stood still (Redlock's
		// waiter in containers at a load of 16: 0.33 s past a bound that
		// counted this process alone).
		// Late is judged by when the granting request went out, as the
		// lease tells it (its expiry less the TTL, on the client's clock),
		// not by its answer: a commit that waits for a starved replica
		// (semi-sync MariaDB: answered 0.5 s past the bound with nothing
		// else measured late) took its time after the lock was free. A
		// lease whose expiry counts from before the TTL ran out (from the
		// acquire's start, say) does not tell when its grant was asked.
		asked, counted := took, "no expiry"
		if vu := lease2.ValidUntil(); !vu.IsZero() {
			a := vu.Add(-ttl).Sub(start)
			counted = a.String()
			if a >= ttl-100*time.Millisecond && a < asked {
				asked = a
			}
		}
		late := ttl + time.Second + 4*granted + still + slow
		if took < ttl-100*time.Millisecond || asked > late {
			t.Errorf("lock of a crashed holder freed after %v (its granting request sent after %v), want between %v and %v (acquire took %v, the waiter asked from %v, its lease counts from %v, this process still for %v, the server's round trips late by %v)",
				took, asked, ttl-100*time.Millisecond, late, granted, waitFrom, counted, still, slow)
		}
		releaseOrExpired(t, lease2)
		return
	}
}

// releaseOrExpired releases a lease whose TTL is short enough for a
// starved machine to run past it before the release is sent: "not held"
// is then the honest answer, not a failure.
func releaseOrExpired(t T, lease impls.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := releaseSettled(ctx, lease)
	// Answered after the lease's end, "not held" tells nothing: the
	// release may have gone out after it (a watchdog's release first waits
	// for a renewal in flight, which a starved server answers late).
	if vu, answered := lease.ValidUntil(), time.Now(); errors.Is(err, impls.ErrNotHeld) && !vu.IsZero() && !answered.Before(vu) {
		t.Logf("release %s answered %v past its lease: %v", lease.Key(), answered.Sub(vu), err)
		return
	}
	if err != nil {
		t.Fatalf("release %s: %v", lease.Key(), err)
	}
}

// validUntilOnTheClientsClock: a lease's expiry is told on the client's
// own lease clock, the clock the lab skews, even where a library keeps its
// own on the machine's clock; else a clock fault would move what the
// history says the holder believed without the holder believing it.
func (s *suite) validUntilOnTheClientsClock(t T) {
	const ttl = 5 * time.Second
	clk := &clock.Skewable{}
	clk.SetOffset(-time.Hour)
	l := s.lockerWithClock(t, 1, s.h.Endpoints, clk)
	lease := acquire(t, l, s.key(t), impls.AcquireOptions{TTL: ttl})
	now := clk.Now()
	if vu := lease.ValidUntil(); !vu.After(now) || vu.After(now.Add(ttl)) {
		t.Errorf("ValidUntil = %v; the client's clock reads %v (an hour behind the machine's): want within one TTL after it", vu, now)
	}
	release(t, lease)
}

// staleReleaseDeletesOthersLock: a negative control. Release without an
// owner check deletes the next holder's lock.
func (s *suite) staleReleaseDeletesOthersLock(t T) {
	key := s.key(t)
	a, b, c := s.locker(t, 1), s.locker(t, 2), s.locker(t, 3)
	stale := acquire(t, a, key, impls.AcquireOptions{})
	release(t, stale)
	acquire(t, b, key, impls.AcquireOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stale.Release(ctx); err != nil {
		t.Fatalf("a release without owner check should go through: %v", err)
	}
	lease, err := tryAcquire(c, key)
	if err != nil {
		t.Fatalf("the stale release should have freed the other client's lock: %v", err)
	}
	release(t, lease)
}

// expiredHolderReleaseRefused: a holder that outlived its TTL cannot free
// the lock of the client that took over.
func (s *suite) expiredHolderReleaseRefused(t T) {
	const ttl = 300 * time.Millisecond
	key := s.key(t)
	a, b, c := s.locker(t, 1), s.locker(t, 2), s.locker(t, 3)
	old := acquire(t, a, key, impls.AcquireOptions{TTL: ttl})
	time.Sleep(ttl + 200*time.Millisecond)
	held := acquire(t, b, key, impls.AcquireOptions{TTL: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := old.Release(ctx); !errors.Is(err, impls.ErrNotHeld) {
		t.Fatalf("release after expiry: err = %v, want ErrNotHeld", err)
	}
	if _, err := tryAcquire(c, key); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("the new holder's lock must survive the old holder's release: err = %v", err)
	}
	release(t, held)
}

// crashedHolderBlocksForever: a negative control. Without expiry a holder
// that vanishes keeps the lock.
func (s *suite) crashedHolderBlocksForever(t T) {
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	acquire(t, a, key, impls.AcquireOptions{TTL: 300 * time.Millisecond})
	a.Close() // crash: no release
	time.Sleep(1500 * time.Millisecond)
	if _, err := tryAcquire(b, key); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("a crashed holder's lock should stay held forever: err = %v", err)
	}
}

// slowReleaseDeletesNextHoldersLock: a negative control. The holder's
// release reads the lock (its own), the reply is slow, the lease expires,
// another client takes the lock, and the holder's delete then removes it.
func (s *suite) slowReleaseDeletesNextHoldersLock(t T) {
	const ttl = 500 * time.Millisecond
	a := s.locker(t, 1)                                // through the proxies
	b, c := s.directLocker(t, 2), s.directLocker(t, 3) // unaffected by the slow replies
	bg := context.Background()
	for try := 1; ; try++ {
		key := fmt.Sprintf("%s-%d", s.key(t), try)
		old := acquire(t, a, key, impls.AcquireOptions{TTL: ttl})
		time.Sleep(ttl - 150*time.Millisecond)
		if err := s.h.SlowReplies.Inject(bg); err != nil {
			t.Fatal(err)
		}
		// The release must ask while the old lease still runs: one asked
		// after it finds the key gone and answers not held, whatever the
		// release's check. A loaded machine's sleep can run that late; the
		// case is then made again on a new key.
		late := !time.Now().Before(old.ValidUntil())
		released := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg, 5*time.Second)
			defer cancel()
			released <- old.Release(ctx)
		}()
		held := acquire(t, b, key, impls.AcquireOptions{TTL: 30 * time.Second}) // waits for the expiry
		err := <-released
		s.h.SlowReplies.Heal(bg)
		if err != nil {
			if late && try < 3 && errors.Is(err, impls.ErrNotHeld) {
				t.Logf("try %d: the old holder's release was asked %v past its lease: again", try, time.Since(old.ValidUntil()))
				release(t, held)
				continue
			}
			t.Fatalf("the old holder's release: %v", err)
		}
		lease, err := tryAcquire(c, key)
		if err != nil {
			t.Fatalf("the old holder's release should have deleted the new holder's lock: %v", err)
		}
		release(t, lease)
		return
	}
}

// crashedHolderFreedAfterSession: a holder that vanishes is detected by
// its session timing out; its lock comes free then, not before.
func (s *suite) crashedHolderFreedAfterSession(t T) {
	after := s.h.Approach.CrashFreedAfter
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	stalls, starved := stall.NewWatch(wctx), s.serverWaits(wctx)
	// The pace first: its own hold took 10 s on a starved etcd, long
	// enough for the holder's session to run out before its crash.
	server := s.watchPace(t, key+"-pace")
	defer server.stop()
	acquire(t, a, key, impls.AcquireOptions{})
	start := time.Now()
	a.Close() // crash: the connection drops, the session is not closed
	ctx, cancel := context.WithTimeout(context.Background(), 3*after+10*time.Second)
	defer cancel()
	// A waiter whose own connection closed under a loaded machine (an
	// indeterminate acquire: its queue node may stand) or whose own
	// session expired while it waited is replaced, as the lab replaces
	// its clients; what it may have left stands one session more, which
	// the bound allows.
	var lease impls.Lease
	var err error
	replaced := 0
	for {
		lease, err = b.Acquire(ctx, key, impls.AcquireOptions{})
		if !errors.Is(err, impls.ErrIndeterminate) && !errors.Is(err, impls.ErrSessionLost) || replaced == 2 || ctx.Err() != nil {
			break
		}
		t.Logf("the waiter's acquire was indeterminate or its session lost (%v): a new waiter", err)
		b.Close()
		replaced++
		b = s.locker(t, 2+replaced)
	}
	if err != nil {
		t.Fatalf("lock of a crashed holder never freed: %v", err)
	}
	took := time.Since(start)
	// Late by as long as this process or the server stood still: a
	// starved server expires a session late (an etcd under load freed
	// a 2 s lease after 7.7 s; a ZooKeeper beside two busy loops, 5.4 s
	// after a 2 s session, while its answers were late by 54 ms only:
	// what expires sessions waited for a CPU, not what answers).
	still, slow := stalls.Within(start, start.Add(took)), server.lateWithin(start, start.Add(took))
	waited := starved.Within(start, start.Add(took))
	if bound := after + time.Duration(replaced)*after + 3*time.Second + still + max(slow, waited); took < after/2 || took > bound {
		t.Errorf("lock of a crashed holder freed after %v, want about the session timeout %v (%d waiters replaced; this process still for %v, the server's round trips late by %v, its threads waiting for a CPU %v)", took, after, replaced, still, slow, waited)
	} else {
		t.Logf("freed after %v (this process still for %v, the server's round trips late by %v, its threads waiting for a CPU %v)", took, still, slow, waited)
	}
	release(t, lease)
}

// serverWaits watches the servers the harness can kill, where locklab
// runs them on this machine, for their threads' waits for a CPU of 20 ms
// or more (none listed: a watch that sees nothing).
func (s *suite) serverWaits(ctx context.Context) *stall.Watch {
	type local interface{ LocalProcesses() []int }
	return stall.NewRunqueueWatch(ctx, 20*time.Millisecond, func() []int {
		var pids []int
		for _, n := range s.h.Nodes {
			if l, ok := n.(local); ok {
				pids = append(pids, l.LocalProcesses()...)
			}
		}
		return pids
	})
}

// pace times round trips to the server, one try every 100 ms on a key
// another client holds, until stop: how far they ran past the quickest is
// how long the server (or the way to it) stood still, as a client sees
// it. A container starved with its cgroup answers late while this process
// runs on.
type pace struct {
	mu       sync.Mutex
	samples  []paceSample
	quickest time.Duration
	cancel   context.CancelFunc
	done     chan struct{}
}

type paceSample struct {
	at  time.Time
	rtt time.Duration
}

func (s *suite) watchPace(t T, key string) *pace {
	holder, prober := s.locker(t, 11), s.locker(t, 12)
	held := paceHold(t, holder, key)
	ctx, cancel := context.WithCancel(context.Background())
	p := &pace{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer func() { _ = held.Release(context.Background()) }()
		for ctx.Err() == nil {
			start := time.Now()
			if l, err := tryAcquire(prober, held.Key()); err == nil {
				_ = l.Release(context.Background()) // the holder's lease ran out: still a round trip
			}
			rtt := time.Since(start)
			p.mu.Lock()
			p.samples = append(p.samples, paceSample{start, rtt})
			if p.quickest == 0 || rtt < p.quickest {
				p.quickest = rtt
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return p
}

// connectionLost says whether err is a client's lost connection: the
// request's outcome unknown, or its servers unreachable. On a starved
// machine it says nothing of the lock, and the tests that meet it try
// again.
func connectionLost(err error) bool {
	return errors.Is(err, impls.ErrIndeterminate) || errors.Is(err, impls.ErrUnavailable)
}

// paceHold takes the key the pace's prober is refused on. The pace is the
// test's own yardstick, not what it checks.
func paceHold(t T, holder impls.Locker, key string) impls.Lease {
	t.Helper()
	return setUpHold(t, holder, key, impls.AcquireOptions{}, "the pace's key")
}

// setUpHold takes a free key a test starts from (what, in its messages),
// not one it checks: an answer lost on a starved server ("zk: connection
// closed" at a load of 17) is tried again on a new key, three times at
// most.
func setUpHold(t T, l impls.Locker, key string, opt impls.AcquireOptions, what string) impls.Lease {
	t.Helper()
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lease, err := l.Acquire(ctx, fmt.Sprintf("%s-%d", key, try), opt)
		cancel()
		if err == nil {
			return lease
		}
		if try == 3 || !connectionLost(err) {
			t.Fatalf("acquire %s (%s): %v", key, what, err)
		}
		t.Logf("acquire %s (%s), try %d: %v: again", key, what, try, err)
		// A client reconnecting (a session LOST) answers at once until
		// it has: give it a moment.
		time.Sleep(time.Duration(try) * 500 * time.Millisecond)
	}
}

// lateWithin sums how far the round trips that overlap [from, to] ran past
// the quickest.
func (p *pace) lateWithin(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var late time.Duration
	for _, x := range p.samples {
		if x.at.Before(to) && x.at.Add(x.rtt).After(from) {
			late += x.rtt - p.quickest
		}
	}
	return late
}

// lateBy is how far one round trip of rtt ran past the pace's quickest: a
// request the test timed itself is a measure of the way to the server too.
func (p *pace) lateBy(rtt time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(rtt-p.quickest, 0)
}

func (p *pace) stop() {
	p.cancel()
	<-p.done
}

// crashedHolderFreedOnDisconnect: the server frees a lock as soon as the
// holder's connection goes.
func (s *suite) crashedHolderFreedOnDisconnect(t T) {
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	acquire(t, a, key, impls.AcquireOptions{})
	start := time.Now()
	a.Close()
	release(t, acquire(t, b, key, impls.AcquireOptions{}))
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("lock freed %v after the holder's connection closed", took)
	}
}

// liveHolderReaped: a negative control. The monitor frees a lock older than
// its TTL even though its holder is alive and still working.
func (s *suite) liveHolderReaped(t T) {
	const ttl = 300 * time.Millisecond
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	old := acquire(t, a, key, impls.AcquireOptions{TTL: ttl})
	// a works on, never releasing; b must get in within a few TTLs.
	ctx, cancel := context.WithTimeout(context.Background(), 10*ttl)
	defer cancel()
	lease, err := b.Acquire(ctx, key, impls.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("the live holder's lock was never reaped: %v", err)
	}
	if err := old.Release(context.Background()); !errors.Is(err, impls.ErrNotHeld) {
		t.Errorf("the reaped holder's release: err = %v, want ErrNotHeld", err)
	}
	release(t, lease)
}

// reentrantAcquire: the holder may acquire again; the lock is free only
// after as many releases.
func (s *suite) reentrantAcquire(t T) {
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	first := acquire(t, a, key, impls.AcquireOptions{})
	second := acquire(t, a, key, impls.AcquireOptions{Try: true})
	release(t, second)
	if _, err := tryAcquire(b, key); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("after one of two releases the lock must still be held: err = %v", err)
	}
	release(t, first)
	release(t, acquire(t, b, key, impls.AcquireOptions{Try: true}))
}

// reentryRefused: without reentrancy the holder's second acquire is
// refused like anyone else's.
func (s *suite) reentryRefused(t T) {
	key := s.key(t)
	a := s.locker(t, 1)
	held := acquire(t, a, key, impls.AcquireOptions{})
	if _, err := tryAcquire(a, key); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("re-entry by the holder: err = %v, want ErrNotAcquired", err)
	}
	release(t, held)
}

// lossSignalled: when the client is cut off past the session (or lease)
// timeout, the server frees the lock, and the holder is told.
func (s *suite) lossSignalled(t T) {
	const ttl = time.Second
	// The grant is where the test starts: a loaded machine's lost answer
	// there ("create: indeterminate: zk: connection closed", zk-sequential
	// beside two busy loops) says nothing of the signal.
	lease := setUpHold(t, s.locker(t, 1), s.key(t), impls.AcquireOptions{TTL: ttl}, "the holder to be cut off")
	lost := lease.Lost()
	if lost == nil {
		t.Fatal("approach declares a loss signal but the lease has no Lost channel")
	}
	select {
	case <-lost:
		t.Fatal("Lost closed while the lock was held")
	default:
	}
	bg := context.Background()
	if err := s.h.Partition.Inject(bg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(max(s.h.Approach.CrashFreedAfter, ttl) + 1500*time.Millisecond)
	if err := s.h.Partition.Heal(bg); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(15 * time.Second):
		t.Fatal("the lock expired on the server but the holder was never told")
	}
}

// fairGrantOrder: waiters that queue one after another are granted the
// lock in that order. Each waiter is given time to join the queue before
// the next arrives; on a loaded machine a waiter may not have reached the
// server in that time, so a wrong order is tried again with wider spacing
// (150 ms, 400 ms, 1 s). A lock that does not queue its waiters grants 7 of
// them in arrival order by chance about once in 5,040 at any spacing, so
// three tries pass it less than once in 1,600.
func (s *suite) fairGrantOrder(t T) {
	const waiters = 7
	arrival := make([]int, waiters)
	for i := range arrival {
		arrival[i] = i
	}
	var got [][]int
	round := 0
	for _, spacing := range []time.Duration{150 * time.Millisecond, 400 * time.Millisecond, time.Second} {
		var order []int
		// A round in which a waiter lost its connection (a ZooKeeper
		// container starved with two busy loops beside the suite: "zk:
		// connection closed" for four of seven), or the holder its lease
		// or session, says nothing of the order: it is made again on a key
		// of its own, three times at most.
		for try := 1; ; try++ {
			round++
			var lost error
			order, lost = s.grantOrder(t, fmt.Sprintf("%s-%d", s.key(t), round), waiters, spacing)
			if lost == nil {
				break
			}
			if try == 3 {
				t.Fatalf("with %v between arrivals, a connection or the holder's lease was lost in each of 3 rounds; the last: %v", spacing, lost)
			}
			t.Logf("with %v between arrivals, a round lost a connection or the holder's lease (%v): again", spacing, lost)
		}
		if slices.Equal(order, arrival) {
			if len(got) > 0 {
				t.Logf("arrival order kept with %v between arrivals, after %v", spacing, got)
			}
			return
		}
		got = append(got, order)
	}
	t.Fatalf("grant orders %v with 150ms, 400ms and 1s between arrivals, want arrival order 0..%d", got, waiters-1)
}

// grantOrder has waiters queue on key behind a holder, spacing apart, and
// returns the order in which they were granted the lock; lost is the
// holder's release answered not held (its lease or session ran out), or
// the first waiter's error that says its connection was lost (its outcome
// unknown, or its servers unreachable), in which case the others' errors
// are not judged.
func (s *suite) grantOrder(t T, key string, waiters int, spacing time.Duration) (order []int, lost error) {
	holder := acquire(t, s.locker(t, 0), key, impls.AcquireOptions{})
	var mu sync.Mutex
	errs := make([]error, waiters)
	var wg sync.WaitGroup
	for i := 0; i < waiters; i++ {
		l := s.locker(t, i+1)
		wg.Add(1)
		go func(i int, l impls.Locker) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lease, err := l.Acquire(ctx, key, impls.AcquireOptions{})
			if err != nil {
				errs[i] = fmt.Errorf("waiter %d: %w", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			lease.Release(context.Background())
		}(i, l)
		time.Sleep(spacing) // let it join the queue before the next
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	released := releaseSettled(ctx, holder)
	cancel()
	wg.Wait()
	if errors.Is(released, impls.ErrNotHeld) {
		// The holder's lease or session ran out while the waiters queued
		// (a starved etcd or ZooKeeper): the queue moved without it.
		return order, fmt.Errorf("the holder: %w", released)
	}
	if released != nil {
		t.Fatalf("release %s: %v", key, released)
	}
	for _, err := range errs {
		if connectionLost(err) {
			return order, err
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Errorf("%v", err)
		}
	}
	return order, nil
}

// HandOff measures how long after the holder starts its release a waiting
// client gets the lock.
func HandOff(ctx context.Context, a, b impls.Locker, key string, waitFirst time.Duration) (time.Duration, error) {
	released, granted, err := handOff(ctx, a, b, key, waitFirst)
	return granted.Sub(released), err
}

// handOff is HandOff, saying when the release began and when the waiter
// was granted.
func handOff(ctx context.Context, a, b impls.Locker, key string, waitFirst time.Duration) (released, granted time.Time, err error) {
	held, err := a.Acquire(ctx, key, impls.AcquireOptions{})
	if err != nil {
		return released, granted, err
	}
	type grant struct {
		at  time.Time
		err error
	}
	got := make(chan grant, 1)
	go func() {
		lease, err := b.Acquire(ctx, key, impls.AcquireOptions{})
		at := time.Now()
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- grant{at, err}
	}()
	time.Sleep(waitFirst) // the waiter settles into waiting (or polling at its slowest)
	released = time.Now()
	if err := held.Release(ctx); err != nil {
		// No hand-off to time: the release is settled (one whose answer
		// was lost is asked again) and the waiter's grant is waited for,
		// so that nothing of this one is left for the next.
		if errors.Is(err, impls.ErrIndeterminate) {
			_ = releaseSettled(ctx, held)
		}
		<-got
		return released, granted, err
	}
	g := <-got
	return released, g.at, g.err
}

// blockingHandOff: a waiter that is notified gets the lock within a few
// round trips of the release, however long it has waited. What a round
// trip costs is measured, not assumed: on a loaded machine the server (in
// a container, starved with its cgroup) answers every request slowly, and
// this process itself stands still now and then (handOffBound).
//
// A round is five hand-offs, of which at most one may be slow: one slowed
// by a preempted process says nothing, while a waiter that polls after
// waiting 300 ms, or a notification lost now and then, is slow more than
// once. A round with more is made again, three rounds at most: a server
// of a process per connection (PostgreSQL) starves the waiter's backend
// where the pace's probes do not see it (two busy loops beside the suite:
// 215 ms with nothing measured standing still), while a waiter that polls
// is slow in every round.
func (s *suite) blockingHandOff(t T) {
	a, b := s.locker(t, 1), s.locker(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stalls := stall.NewWatch(ctx)
	server := s.watchPace(t, s.key(t)+"-pace")
	defer server.stop()
	var slow []string
	for round := 1; round <= handOffRounds; round++ {
		var all []time.Duration
		slow, all = s.handOffRound(ctx, t, a, b, stalls, server)
		t.Logf("round %d, hand-offs: %v", round, all)
		if len(slow) <= 1 {
			return
		}
		t.Logf("round %d: %d of 5 hand-offs slow: %v", round, len(slow), slow)
	}
	t.Errorf("%d of 5 hand-offs took longer than a few round trips after a release, in each of %d rounds; the last: %v", len(slow), handOffRounds, slow)
}

// handOffRounds is how many rounds of five hand-offs blockingHandOff may
// make before it judges.
const handOffRounds = 3

// handOffRound makes five hand-offs and says which were slow.
//
// A hand-off whose client lost its connection (a ZooKeeper container
// starved past the client's ping, refusing or cutting off a call:
// "release ...: indeterminate: zk: connection closed"), or whose lease
// ran out before the release (a starved etcd answered no keep-alive in
// time: "not held: the lease had expired"), is done again: it says
// nothing of how a waiter is woken. Availability and expiry have tests
// of their own.
func (s *suite) handOffRound(ctx context.Context, t T, a, b impls.Locker, stalls *stall.Watch, server *pace) (slow []string, all []time.Duration) {
	lost := 0
	for len(all) < 5 {
		// After a lost connection, a key of its own: an acquire whose
		// outcome was unknown may have left a hold behind (a ZooKeeper
		// node of a session that lives on).
		key := fmt.Sprintf("%s-%d", s.key(t), lost)
		released, granted, err := handOff(ctx, a, b, key, 300*time.Millisecond)
		if (errors.Is(err, impls.ErrUnavailable) || errors.Is(err, impls.ErrNotHeld) || errors.Is(err, impls.ErrIndeterminate)) && lost < 3 {
			lost++
			t.Logf("a hand-off again after a lost connection: %v", err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		d := granted.Sub(released)
		// The round trip of the hand-off's own steps, uncontended: b takes
		// a free key and lets it go.
		rtStart := time.Now()
		lease, err := b.Acquire(ctx, key, impls.AcquireOptions{})
		if (errors.Is(err, impls.ErrUnavailable) || errors.Is(err, impls.ErrIndeterminate)) && lost < 3 {
			lost++
			t.Logf("a hand-off again after a lost connection: %v", err)
			continue
		}
		if err != nil {
			t.Fatalf("an uncontended acquire after a hand-off: %v", err)
		}
		release(t, lease)
		rt := time.Since(rtStart)
		still, late := stalls.Within(released, granted), server.lateWithin(released, granted)
		all = append(all, d)
		if bound := handOffBound(rt, still+late); d > bound {
			slow = append(slow, fmt.Sprintf("%v (bound %v: round trip %v, this process still for %v, the server's round trips late by %v)", d, bound, rt, still, late))
		}
	}
	return slow, all
}

// handOffBound is what a notified hand-off may take: 100 ms, a few round
// trips on an idle machine; three times the uncontended acquire and
// release measured beside it (the release, the wake-up, the acquire); and
// the time this process or the server stood still meanwhile. A waiter that polls slowly
// or misses its notification waits for its own timer, which none of these
// grow with.
func handOffBound(roundTrip, still time.Duration) time.Duration {
	return 100*time.Millisecond + 3*roundTrip + still
}

func (s *suite) extendKeepsTheLock(t T) {
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The extend must reach the servers while the lease still holds. On a
	// loaded machine an acquire can take most of a short lease (Redlock
	// found 3 of 5 nodes expired under two busy loops), so when the lease
	// was mostly gone before the extend went out, or gone before its
	// answer came, or when its outcome is unknown (Redlock's nodes slower
	// than its node timeout, a hundredth of the TTL), the run is redone on
	// a lease twice as long: the order of the events decides, not a guess
	// of the machine's speed.
	// So is a try answered only after the extended lease had run out on
	// the holder's clock (a replicated MariaDB's transaction granted about
	// 3 s late on a starved machine, a Redis try's read timing out after
	// 3 s), and a try whose outcome is unknown when the holder's extends
	// had no answer while the lease lasted: the order does not tell
	// whether the lock was free within the lease.
	ttl := 500 * time.Millisecond
	var lease impls.Lease
	for ; ; ttl *= 2 {
		var late bool
		if lease, late = extendInTime(ctx, t, a, key, ttl); late {
			continue
		}
		if vu := time.Until(lease.ValidUntil()); vu < 4*ttl {
			t.Errorf("ValidUntil only %v ahead after extending to %v", vu, 6*ttl)
		}
		time.Sleep(ttl + ttl/2) // past the original TTL
		other, err := tryAcquire(b, key)
		late = !time.Now().Before(lease.ValidUntil()) && ttl < 4*time.Second
		switch {
		case errors.Is(err, impls.ErrNotAcquired):
		case late:
			t.Logf("a try on a %v lease extended to %v was answered after the extended lease's end (%v): again on a longer lease", ttl, 6*ttl, err)
		case errors.Is(err, impls.ErrIndeterminate):
			if late = !stillHeld(t, lease, err, 6*ttl); late && ttl >= 4*time.Second {
				t.Fatalf("a try was indeterminate and no extend of the holder was answered within its lease, on leases of up to %v: %v", ttl, err)
			}
		default:
			t.Fatalf("extended lock was free after its first TTL: err = %v", err)
		}
		if !late {
			break
		}
		if other != nil {
			_ = releaseSettled(ctx, other)
		}
		_ = releaseSettled(ctx, lease)
	}
	release(t, lease)
	// An extend whose outcome is unknown (every Redlock node's answer past
	// its node timeout on a starved machine: three in a row in a loaded
	// make test) is asked again, as a careful caller would: once known, it
	// must be "not held". Its length is the longest the tests ask, 4 s:
	// Redlock gives each node a hundredth of it to answer, 40 ms rather
	// than a second's 10 ms.
	err := lease.Extend(ctx, 4*time.Second)
	for try := 1; errors.Is(err, impls.ErrIndeterminate) && try < 10; try++ {
		t.Logf("extend after release, try %d: %v: again", try, err)
		time.Sleep(200 * time.Millisecond)
		err = lease.Extend(ctx, 4*time.Second)
	}
	if !errors.Is(err, impls.ErrNotHeld) {
		t.Fatalf("extend after release: err = %v, want ErrNotHeld", err)
	}
}

// extendInTime takes key on a for ttl and extends it to 6*ttl. late: the
// extend went out with under half the lease left, or its answer came after
// the lease's end, or its outcome is unknown (the lease is then given
// back, for a try on a longer one); past leases of 4 s that fails t.
func extendInTime(ctx context.Context, t T, a impls.Locker, key string, ttl time.Duration) (lease impls.Lease, late bool) {
	t.Helper()
	lease = acquire(t, a, key, impls.AcquireOptions{TTL: ttl})
	sent := time.Now()
	left := lease.ValidUntil().Sub(sent)
	err := lease.Extend(ctx, 6*ttl)
	late = left < ttl/2 || err != nil && (time.Since(sent) >= left || errors.Is(err, impls.ErrIndeterminate))
	switch {
	case err == nil:
		return lease, false
	case !late:
		t.Fatalf("extend sent %v before the lease's end and answered in %v: %v", left, time.Since(sent), err)
	case ttl >= 4*time.Second:
		t.Fatalf("extend came too late or its outcome unknown on leases of up to %v (left %v when sent): %v", ttl, left, err)
	}
	_ = releaseSettled(ctx, lease)
	t.Logf("a %v lease had %v left when its extend was sent (%v); again on a longer lease", ttl, left, err)
	return nil, true
}

// stillHeld asks whether lease still holds after a try whose answers were
// lost (tried, an indeterminate error): the holder's extend succeeds only
// while it holds the lock, whatever the lost try did. Another try would
// not do: where the lost one took a node, it would be refused there too.
// An extend whose own answers are lost is asked again, 200 ms later, three
// times at most (five starved Redlock containers missed their node timeout
// three times within 0.3 s). known is false when no extend had an answer
// while the lease was still valid: an answer after its end tells nothing.
func stillHeld(t T, lease impls.Lease, tried error, ttl time.Duration) (known bool) {
	t.Helper()
	for try := 1; try <= 3; try++ {
		if try > 1 {
			time.Sleep(200 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := lease.Extend(ctx, ttl)
		cancel()
		inTime := time.Now().Before(lease.ValidUntil())
		switch {
		case err == nil:
			t.Logf("a try on the held lock was indeterminate (%v); its holder's extend says it still holds", tried)
			return true
		case !inTime:
			t.Logf("a try on the held lock was indeterminate (%v); its holder's extend was answered after the lease's end: %v", tried, err)
			return false
		case !errors.Is(err, impls.ErrIndeterminate):
			t.Fatalf("extended lock was free after its first TTL: a try was indeterminate (%v), then the holder's extend: %v", tried, err)
		}
		t.Logf("a try on the held lock was indeterminate (%v); its holder's extend too, try %d: %v", tried, try, err)
	}
	return false
}

func (s *suite) extendUnsupported(t T) {
	key := s.key(t)
	lease := acquire(t, s.locker(t, 1), key, impls.AcquireOptions{})
	defer release(t, lease)
	if err := lease.Extend(context.Background(), time.Second); !errors.Is(err, impls.ErrUnsupported) {
		t.Fatalf("extend on an approach without renewal: err = %v, want ErrUnsupported", err)
	}
}

// waiterAsks is long enough for a waiter's first request to reach the
// server on a loaded machine, and short beside the test's 10 s waits.
const waiterAsks = 300 * time.Millisecond

// fencingTokensIncrease: tokens grow in the order of grants, also for a
// waiter that asked before a grant it then waited across: a token drawn
// when the request arrives, not when the lock is granted, goes backwards
// there, though every grant alone looks right.
func (s *suite) fencingTokensIncrease(t T) {
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	var last uint64
	grants := 0
	granted := func(who string, lease impls.Lease) {
		t.Helper()
		tok, ok := lease.Token()
		if !ok {
			t.Fatal("approach declares fencing but the lease has no token")
		}
		if grants > 0 && tok <= last {
			t.Fatalf("grant %d (%s) got token %d after token %d", grants+1, who, tok, last)
		}
		last = tok
		grants++
	}
	type answer struct {
		lease impls.Lease
		err   error
	}
	acrossGrants := 0
	for range 3 {
		held := acquire(t, a, key, impls.AcquireOptions{})
		granted("a", held)
		waited := make(chan answer, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := b.Acquire(ctx, key, impls.AcquireOptions{})
			waited <- answer{l, err}
		}()
		// b asks while a holds; then a lets go and asks again at once: a
		// lock that does not queue its waiters grants a ahead of b.
		time.Sleep(waiterAsks)
		release(t, held)
		again, err := tryAcquire(a, key)
		switch {
		case err == nil:
			granted("a again, b waiting", again)
			acrossGrants++
			release(t, again)
		case !errors.Is(err, impls.ErrNotAcquired):
			t.Fatalf("a's try after its release: %v", err)
		}
		w := <-waited
		if w.err != nil {
			t.Fatalf("b's wait: %v", w.err)
		}
		granted("b, the waiter", w.lease)
		release(t, w.lease)
	}
	t.Logf("%d grants, %d of them while b waited", grants, acrossGrants)
}

// restartAll brings every node back, failing the test if one does not come.
func (s *suite) restartAll(t T, nodes []Node) {
	t.Helper()
	// A CI run's Docker engine, starting other tests' containers, took
	// over 60 s to start one.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// In parallel: a quorum member is healthy only once a quorum is up.
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		go func(n Node) { errs <- n.Restart(ctx) }(n)
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatalf("restart: %v", err)
		}
	}
}

// needNodes skips a test that kills servers when there are none locklab
// may kill: the user's own servers (--cluster external).
func (s *suite) needNodes(t T) {
	if len(s.h.Nodes) == 0 {
		t.Skip("no server locklab may kill and restart (the user's own servers: --cluster external)")
	}
}

// survivesMinorityLoss: with a minority of nodes dead the lock still works.
func (s *suite) survivesMinorityLoss(t T) {
	s.needNodes(t)
	minority := s.h.Nodes[:(len(s.h.Nodes)-1)/2]
	for _, n := range minority {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	defer s.restartAll(t, minority)
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	lease := acquire(t, a, key, impls.AcquireOptions{TTL: 10 * time.Second})
	if _, err := tryAcquire(b, key); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("with %d of %d nodes dead, a held lock must stay exclusive: err = %v", len(minority), len(s.h.Nodes), err)
	}
	release(t, lease)
	release(t, acquire(t, b, key, impls.AcquireOptions{TTL: 10 * time.Second}))
}

// serverDownIsUnavailable: with every server dead, Acquire answers
// "unavailable" within its deadline instead of hanging. The client
// connects directly: through a proxy a dead server looks like a connection
// that accepts and then closes, which no client can tell from a lost reply.
func (s *suite) serverDownIsUnavailable(t T) {
	s.needNodes(t)
	l := s.directLocker(t, 1)
	for _, n := range s.h.Nodes {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	defer s.restartAll(t, s.h.Nodes)
	const wait = 3 * time.Second
	try := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		start := time.Now()
		_, err := l.Acquire(ctx, s.key(t), impls.AcquireOptions{})
		if took := time.Since(start); took > wait+time.Second {
			t.Errorf("acquire against dead servers took %v", took)
		}
		return err
	}
	err := try()
	// A request sent in the instant between the kill and the client
	// noticing it honestly is indeterminate: it went out on a connection
	// the client still believed live, and no client can tell a peer that
	// never read it from one that applied it and died. Once the client has
	// seen the connection fail, the answer must be "unavailable".
	if errors.Is(err, impls.ErrIndeterminate) && !errors.Is(err, impls.ErrUnavailable) {
		t.Logf("first acquire raced the kill: %v", err)
		err = try()
	}
	if !errors.Is(err, impls.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func (s *suite) invalidKeyRejected(t T) {
	l := s.locker(t, 1)
	long := make([]byte, 4096)
	for i := range long {
		long[i] = 'x'
	}
	for _, key := range []string{"", string(long)} {
		if _, err := tryAcquire(l, key); !errors.Is(err, impls.ErrInvalidKey) {
			t.Errorf("key of %d bytes: err = %v, want ErrInvalidKey", len(key), err)
		}
	}
}

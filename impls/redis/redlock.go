package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// RedlockApproach: the Redlock algorithm over N independent masters (5 in
// the embedded cluster). SET NX PX goes to every node in parallel with a
// per-node timeout much smaller than the TTL; the lock is held when a
// majority said yes and time is left: validity = TTL - elapsed - drift,
// drift = TTL*0.01 + 2 ms. A failed attempt unlocks every node, including
// those that seemed to fail, and retries after a random delay.
var RedlockApproach = impls.Approach{
	Name:     "redis-redlock",
	Server:   impls.Redis,
	Caps:     impls.Capabilities{TTL: true, FaultTolerant: true, Renewal: true},
	Safe:     true,
	Survives: "loss of a minority of nodes and client crashes; not a holder that outlives its validity, not a clock jump or a restart without persistence on a node of the majority",
	Summary:  "SET NX PX on N independent masters in parallel; majority and time left = held",
	Fails:    "a restarted node without persistence, or a node whose clock jumps, lets a second majority form while the first holder is still valid",
	New:      newRedlock("redis-redlock", false),
}

// RedlockQuorumApproach is Redlock asking a bare majority first: SET NX PX
// goes to the first three of the five nodes, and to the other two only when
// one of the three fails or has not answered within a quarter of the node
// timeout, or when refusals leave a majority possible only with them (not
// when the first three all refuse: another client holds the lock there,
// and taking the other two would only stand in the next holder's way).
// A quorum system needs no more (any two majorities
// share a node), and an uncontended cycle sends 6 commands instead of 10,
// the only way past the all-nodes floor (a fan-out waiting for a majority
// of five still pays for five requests). The price is the margin: its
// holder sits on exactly three nodes, so one of them restarted empty, or
// whose clock jumps, hands out a second majority, where redis-redlock's
// holder usually keeps four or five.
var RedlockQuorumApproach = impls.Approach{
	Name:     "redis-redlock-quorum",
	Server:   impls.Redis,
	Caps:     impls.Capabilities{TTL: true, FaultTolerant: true, Renewal: true},
	Safe:     true,
	Survives: "as redis-redlock: the loss of a minority of nodes, client crashes",
	Summary:  "Redlock asking a bare majority first, the other nodes only when needed: 6 commands a cycle instead of 10",
	Fails:    "as redis-redlock, and more often: its holder is on exactly three nodes, so one node restarted without persistence or whose clock jumps lets a second majority form",
	New:      newRedlock("redis-redlock-quorum", true),
}

// newRedlock connects a Redlock client to every Redis node; quorumFirst
// asks a bare majority first.
func newRedlock(name string, quorumFirst bool) func(context.Context, impls.Env) (impls.Locker, error) {
	return func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if len(env.Endpoints[impls.Redis].Addrs) < 3 {
			return nil, fmt.Errorf("%s: need at least 3 independent redis nodes, have %d", name, len(env.Endpoints[impls.Redis].Addrs))
		}
		// A fault-tolerant client starts with a minority of nodes down:
		// it needs a quorum to answer, and reconnects to the rest later.
		r := &Redlock{clock: env.Clock, quorumFirst: quorumFirst, workers: newWorkers()}
		for _, a := range env.Endpoints[impls.Redis].Addrs {
			r.nodes = append(r.nodes, newClientNoPing(a))
		}
		res := r.onAll(ctx, r.all(), 2*time.Second, func(ctx context.Context, _ int, c *goredis.Client) (bool, error) {
			return true, c.Ping(ctx).Err()
		})
		up := 0
		for _, x := range res {
			if x.err == nil {
				up++
			}
		}
		if up < r.quorum() {
			r.Close()
			return nil, fmt.Errorf("%s: %w: only %d of %d nodes answer: %w", name, impls.ErrUnavailable, up, len(r.nodes), firstError(res))
		}
		return r, nil
	}
}

// Redlock is one client of the approach.
type Redlock struct {
	nodes []*goredis.Client
	clock clock.Clock
	// quorumFirst asks a bare majority first (redis-redlock-quorum), the
	// other nodes only when needed; otherwise every node at once.
	quorumFirst bool
	workers     *workers // run the requests to the nodes
}

// nodeTimeout bounds one node's answer: small next to the TTL, so a dead
// node does not eat the validity.
func nodeTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/100, 10*time.Millisecond), 50*time.Millisecond)
}

// hedgeDelay is how long a quorum-first round waits for its first majority
// before it asks the other nodes too: long next to a healthy answer (tens
// of microseconds), short next to the node timeout it would otherwise
// spend on a stopped node.
func hedgeDelay(ttl time.Duration) time.Duration { return nodeTimeout(ttl) / 4 }

func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// requestTimeout bounds one request to a node, well past the node timeout:
// a round stops waiting for a node after the node timeout, but its request
// goes on and its answer is read. A request cut off mid-reply costs its
// connection, and under load (both Redlock suites side by side, both cores
// busy) the redials fed on themselves: 60,000 sockets in TIME_WAIT within a
// minute, every node timing out for over a minute, a new client's PING
// unanswered for 2 s. Read to the end, a late answer also says where our
// SET landed, for the unlock.
const requestTimeout = time.Second

// unlockWait is how long a failed round waits for its unlocks before it
// goes on; the unlocks still pending go on under their own deadline
// (a SET's answer may take requestTimeout to come, its delete as long).
const unlockWait = 100 * time.Millisecond

// nodeResult is one node's answer to one request.
type nodeResult struct {
	ok      bool
	err     error
	pending bool // asked, no answer yet: the round was decided without it
}

// nodeFunc is one request to node i.
type nodeFunc func(ctx context.Context, i int, c *goredis.Client) (bool, error)

// landing tells when each node's SET of a round has answered (or failed):
// a delete sent to a node before its SET arrived would find nothing, and
// the SET would then leave our token there until it expires. nil for a
// node not asked.
type landing []chan struct{}

// wait returns once node i's SET has answered, or ctx ends.
func (l landing) wait(ctx context.Context, i int) error {
	if i >= len(l) || l[i] == nil {
		return nil
	}
	select {
	case <-l[i]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deleteOnceLanded deletes our token from node i if it still holds it,
// once that node's SET of the round has answered.
func deleteOnceLanded(key, token string, landed landing) nodeFunc {
	return func(ctx context.Context, i int, c *goredis.Client) (bool, error) {
		if err := landed.wait(ctx, i); err != nil {
			return false, err
		}
		n, err := compareAndDelete.Run(ctx, c, []string{key}, token).Int()
		return n == 1, err
	}
}

// marked counts the nodes marked true.
func marked(nodes []bool) int {
	n := 0
	for _, m := range nodes {
		if m {
			n++
		}
	}
	return n
}

// answer is node i's result in a fan-out.
type answer struct {
	i int
	nodeResult
}

// fanOut runs f under ctx on every node marked in which, at once; the
// answers come on answers as they arrive (its capacity is the number of
// nodes: no sender waits).
func (r *Redlock) fanOut(ctx context.Context, which []bool, answers chan<- answer, f nodeFunc) {
	for i, c := range r.nodes {
		if !which[i] {
			continue
		}
		r.workers.run(func() {
			ok, err := f(ctx, i, c)
			if err != nil {
				err = classify(ctx, fmt.Sprintf("node %d", i), err)
			}
			answers <- answer{i, nodeResult{ok: ok, err: err}}
		})
	}
}

// settleStragglers lets the left answers still to come arrive (their
// requests still land), then frees their deadline.
func settleStragglers(answers <-chan answer, left int, cancel context.CancelFunc) {
	go func() {
		for ; left > 0; left-- {
			<-answers
		}
		cancel()
	}()
}

// setAll sends SET NX PX to every node at once, or for a quorum-first
// client to the first majority, and to the others when one of those failed
// (and a majority is still possible), when refusals left too few to make a
// majority without them and enough grants to make one with them, or when
// the hedge delay passed without a decision. It returns as soon as a
// majority has granted, every node asked has answered, the node timeout
// has passed or ctx ends; a node that has not answered by then is pending
// (its SET still lands, and is ours to release: see requestTimeout).
// landed tells when each asked node's SET has answered, and which nodes
// were asked (a node never asked cannot hold our token).
func (r *Redlock) setAll(ctx context.Context, key, token string, ttl time.Duration) (res []nodeResult, landed landing) {
	if ctx.Err() != nil {
		// Its requests would outlive it: send none.
		return make([]nodeResult, len(r.nodes)), make(landing, len(r.nodes))
	}
	round := time.NewTimer(nodeTimeout(ttl))
	defer round.Stop()
	done := ctx.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	landed = make(landing, len(r.nodes))
	set := func(ctx context.Context, i int, c *goredis.Client) (bool, error) {
		defer close(landed[i])
		return c.SetNX(ctx, key, token, ttl).Result()
	}
	answers := make(chan answer, len(r.nodes))
	res = make([]nodeResult, len(r.nodes))
	inFlight := 0
	ask := func(from, to int) {
		which := make([]bool, len(r.nodes))
		for i := from; i < to; i++ {
			which[i], res[i].pending = true, true
			landed[i] = make(chan struct{})
			inFlight++
		}
		r.fanOut(ctx, which, answers, set)
	}
	first := len(r.nodes)
	if r.quorumFirst {
		first = r.quorum()
	}
	ask(0, first)
	unasked := len(r.nodes) - first
	var hedge <-chan time.Time
	if unasked > 0 {
		t := time.NewTimer(hedgeDelay(ttl))
		defer t.Stop()
		hedge = t.C
	}
	askRest := func() {
		if unasked > 0 {
			ask(first, len(r.nodes))
			unasked, hedge = 0, nil
		}
	}
	granted := 0
	for inFlight > 0 {
		select {
		case a := <-answers:
			inFlight--
			res[a.i] = a.nodeResult
			if a.ok {
				granted++
			}
			need := r.quorum() - granted
			switch {
			case need <= 0, inFlight >= need:
				// The nodes asked may still make a majority.
			case a.err != nil && inFlight+unasked >= need:
				// A node failed: the others may make up for it.
				askRest()
			case unasked >= need:
				// Refused, and the grants so far plus the others can
				// still make a majority. Not sooner: under contention
				// the holder refuses on the first three, and asking
				// the others then only takes them from the next holder
				// (16 clients on one key made 30% fewer grants so).
				askRest()
			}
		case <-hedge:
			askRest()
		case <-round.C:
			settleStragglers(answers, inFlight, cancel)
			return res, landed
		case <-done:
			settleStragglers(answers, inFlight, cancel)
			return res, landed
		}
		if granted >= r.quorum() && inFlight > 0 {
			settleStragglers(answers, inFlight, cancel)
			return res, landed
		}
	}
	cancel()
	return res, landed
}

// onAll runs f on every node marked in which, in parallel, each under its
// own timeout; the others' results are zero.
func (r *Redlock) onAll(ctx context.Context, which []bool, timeout time.Duration, f nodeFunc) []nodeResult {
	res := make([]nodeResult, len(r.nodes))
	var wg sync.WaitGroup
	for i, c := range r.nodes {
		if !which[i] {
			continue
		}
		wg.Add(1)
		r.workers.run(func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ok, err := f(nctx, i, c)
			if err != nil {
				err = classify(nctx, fmt.Sprintf("node %d", i), err)
			}
			res[i] = nodeResult{ok: ok, err: err}
		})
	}
	wg.Wait()
	return res
}

// Acquire tries rounds until a majority grants the lock with validity left.
func (r *Redlock) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ttl := ttlOf(opt)
	// maybeSet marks nodes that may hold one of our rounds' tokens: they
	// said yes, or their answer was lost, and no later unlock confirmed
	// otherwise. sent marks
	// every node sent our SET in any round: a SET that timed out may still
	// land after the unlock that cleared maybeSet, so unlocks and the
	// release go to all of them.
	maybeSet := make([]bool, len(r.nodes))
	sent := make([]bool, len(r.nodes))
	for {
		// A token of the round's own: a failed round's unlock, still on
		// its way to a slow node, deletes by token, and must not match
		// what a later round set there.
		token := impls.NewToken()
		start := r.clock.Now()
		res, landed := r.setAll(ctx, key, token, ttl)
		for i, ch := range landed {
			sent[i] = sent[i] || ch != nil
		}
		granted, unavailable := 0, 0
		for i, x := range res {
			switch {
			case x.ok:
				granted++
				maybeSet[i] = true
			case errors.Is(x.err, impls.ErrIndeterminate), x.pending:
				maybeSet[i] = true
			case errors.Is(x.err, impls.ErrUnavailable):
				unavailable++
			}
		}
		validity := ttl - r.clock.Now().Sub(start) - drift(ttl)
		if granted >= r.quorum() && validity > 0 {
			return &lease{key: key, token: token, validUntil: start.Add(ttl - drift(ttl)), nodes: sent, landed: landed,
				release: r.release, extend: r.extend}, nil
		}
		r.unlockAll(key, token, sent, maybeSet, landed)
		maybe := marked(maybeSet)
		switch {
		case unavailable > len(r.nodes)-r.quorum():
			return nil, fmt.Errorf("redlock %s: %w: %d of %d nodes unreachable: %w", key, impls.ErrUnavailable,
				unavailable, len(r.nodes), firstError(res))
		case ctx.Err() != nil && maybe >= r.quorum():
			return nil, fmt.Errorf("redlock %s: %w: %d nodes may hold our token (%v): %w", key, impls.ErrIndeterminate, maybe, firstError(res), context.Cause(ctx))
		case ctx.Err() != nil:
			return nil, impls.NotAcquiredBy(ctx)
		case opt.Try && maybe >= r.quorum():
			// SETs whose answers were lost, and whose unlock failed too,
			// may have made us the holder: not "not acquired".
			return nil, fmt.Errorf("redlock %s: %w: %d nodes may hold our token: %w", key, impls.ErrIndeterminate, maybe, firstError(res))
		case opt.Try:
			refused, failed := 0, 0
			for i, x := range res {
				switch {
				case !sent[i] || x.ok:
				case x.err == nil && !x.pending:
					refused++
				default:
					failed++
				}
			}
			return nil, fmt.Errorf("%w: %s: %d of %d nodes granted, %d refused, %d failed or did not answer in time",
				impls.ErrNotAcquired, key, granted, len(r.nodes), refused, failed)
		}
		// A random delay, so clients that split the votes do not split
		// them again in lock step.
		t := time.NewTimer(time.Duration(rand.Int64N(int64(5 * time.Millisecond))))
		select {
		case <-ctx.Done():
			t.Stop()
			if maybe >= r.quorum() {
				return nil, fmt.Errorf("redlock %s: %w: %d nodes may hold our token: %w", key, impls.ErrIndeterminate, maybe, context.Cause(ctx))
			}
			return nil, impls.NotAcquiredBy(ctx)
		case <-t.C:
		}
	}
}

// unlockAll deletes our token wherever it may be (every node sent our SET),
// each once the round's SET there has answered, clearing maybeSet for the
// nodes that confirmed within unlockWait; the others' deletes go on. It
// runs under its own deadline: the caller's context may be what ended the
// attempt.
func (r *Redlock) unlockAll(key, token string, sent, maybeSet []bool, landed landing) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	answers := make(chan answer, len(r.nodes))
	r.fanOut(ctx, sent, answers, deleteOnceLanded(key, token, landed))
	wait := time.NewTimer(unlockWait)
	defer wait.Stop()
	for left := marked(sent); left > 0; left-- {
		select {
		case a := <-answers:
			if a.err == nil {
				maybeSet[a.i] = false
			}
		case <-wait.C:
			settleStragglers(answers, left, cancel)
			return
		}
	}
	cancel()
}

// release deletes our token on every node sent it, at once (each once its
// SET has answered: a straggler's may still be on its way), and
// returns as soon as a majority confirmed: no other client can then be
// refused for our sake (it needs a majority, and a majority is free). The
// stragglers' deletes go on under their own deadline, whatever the caller
// does with its context once this returns. With fewer confirmations it
// waits for every answer, to tell "not held" (our token on less than a
// majority) from "unknown".
func (r *Redlock) release(ctx context.Context, l *lease) error {
	// A straggler's SET may take requestTimeout to answer, its delete as
	// long again.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*requestTimeout)
	answers := make(chan answer, len(r.nodes))
	r.fanOut(dctx, l.nodes, answers, deleteOnceLanded(l.key, l.token, l.landed))
	asked := marked(l.nodes)
	res := make([]nodeResult, len(r.nodes))
	deleted, unknown := 0, 0
	for n := 0; n < asked; n++ {
		var a answer
		select {
		case a = <-answers:
		case <-ctx.Done():
			// The caller gave up before a majority confirmed: whether
			// the lock was ours to release is unknown.
			settleStragglers(answers, asked-n, cancel)
			return fmt.Errorf("release %s: %w: %w", l.key, impls.ErrIndeterminate, context.Cause(ctx))
		}
		res[a.i] = a.nodeResult
		switch {
		case a.ok:
			deleted++
		case errors.Is(a.err, impls.ErrIndeterminate):
			unknown++
		}
		if deleted >= r.quorum() && n+1 < asked {
			settleStragglers(answers, asked-n-1, cancel)
			return nil
		}
	}
	cancel()
	// The lock is ours only where a majority has our token. Fewer deletes
	// are leftovers: a former holder whose earlier release had not yet
	// reached a straggler node (or timed out there) finds its token on one
	// node while another client holds the majority, and must be told
	// "not held", not "released".
	switch {
	case deleted >= r.quorum():
		return nil
	case deleted+unknown >= r.quorum():
		return fmt.Errorf("release %s: %w: %w", l.key, impls.ErrIndeterminate, firstError(res))
	default:
		return fmt.Errorf("release %s: %w: our token on %d of %d nodes", l.key, impls.ErrNotHeld, deleted, len(r.nodes))
	}
}

// extend resets the expiry wherever our token was sent, at once, and
// decides as soon as a majority confirmed, every node answered, or the
// node timeout passed: as setAll does, it stops waiting for a slow node
// there, but its request is read to the end (see requestTimeout).
func (r *Redlock) extend(ctx context.Context, l *lease, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("extend %s: %w", l.key, err)
	}
	start := r.clock.Now()
	round := time.NewTimer(nodeTimeout(ttl))
	defer round.Stop()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	answers := make(chan answer, len(r.nodes))
	r.fanOut(rctx, l.nodes, answers, func(ctx context.Context, _ int, c *goredis.Client) (bool, error) {
		n, err := compareAndPExpire.Run(ctx, c, []string{l.key}, l.token, ttl.Milliseconds()).Int()
		return n == 1, err
	})
	asked := marked(l.nodes)
	extended, refused, got := 0, 0, 0
wait:
	for got < asked && extended < r.quorum() {
		select {
		case a := <-answers:
			got++
			switch {
			case a.ok:
				extended++
			case a.err == nil:
				refused++ // our token is not there
			}
		case <-round.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	// The requests not yet answered still land, and are read to the end.
	settleStragglers(answers, asked-got, cancel)
	switch {
	case extended >= r.quorum() && ttl-r.clock.Now().Sub(start)-drift(ttl) <= 0:
		return fmt.Errorf("extend %s: %w: %d of %d nodes, with no validity left", l.key, impls.ErrNotHeld, extended, len(r.nodes))
	case extended >= r.quorum():
	case asked-refused < r.quorum(): // the nodes never asked hold none of it
		return fmt.Errorf("extend %s: %w: %d of %d nodes, %d without our token", l.key, impls.ErrNotHeld, extended, len(r.nodes), refused)
	default:
		// Too few confirmed in time, but the nodes that failed or did not
		// answer may have extended it: a majority may still hold our
		// token, for the new TTL or the old.
		return fmt.Errorf("extend %s: %w: %d of %d nodes extended, %d without our token, %d failed or did not answer in time",
			l.key, impls.ErrIndeterminate, extended, len(r.nodes), refused, asked-extended-refused)
	}
	l.validUntil = start.Add(ttl - drift(ttl))
	return nil
}

// Close drops every connection; leases expire on their own.
func (r *Redlock) Close() error {
	r.workers.close()
	var errs []error
	for _, c := range r.nodes {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

func firstError(res []nodeResult) error {
	for _, x := range res {
		if x.err != nil {
			return x.err
		}
	}
	return errors.New("no error")
}

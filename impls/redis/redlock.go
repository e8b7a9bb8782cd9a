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
	Backend:  impls.Redis,
	Caps:     impls.Capabilities{TTL: true, FaultTolerant: true, Renewal: true},
	Safe:     true,
	Survives: "loss of a minority of nodes and client crashes; not a holder that outlives its validity, not a clock jump or a restart without persistence on a node of the majority",
	Summary:  "SET NX PX on N independent masters in parallel; majority and time left = held",
	Fails:    "a restarted node without persistence, or a node whose clock jumps, lets a second majority form while the first holder is still valid",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		if len(env.Endpoints.Redis) < 3 {
			return nil, fmt.Errorf("redis-redlock: need at least 3 independent redis nodes, have %d", len(env.Endpoints.Redis))
		}
		// A fault-tolerant client starts with a minority of nodes down:
		// it needs a quorum to answer, and reconnects to the rest later.
		r := &Redlock{clock: env.Clock}
		for _, a := range env.Endpoints.Redis {
			r.nodes = append(r.nodes, newClientNoPing(a))
		}
		res := r.onAll(ctx, 2*time.Second, func(ctx context.Context, c *goredis.Client) (bool, error) {
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
			return nil, fmt.Errorf("redis-redlock: %w: only %d of %d nodes answer: %w", impls.ErrUnavailable, up, len(r.nodes), firstError(res))
		}
		return r, nil
	},
}

// Redlock is one client of the approach.
type Redlock struct {
	nodes []*goredis.Client
	clock clock.Clock
}

func (r *Redlock) quorum() int { return len(r.nodes)/2 + 1 }

// nodeTimeout bounds one node's answer: small next to the TTL, so a dead
// node does not eat the validity.
func nodeTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/100, 10*time.Millisecond), 50*time.Millisecond)
}

func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// nodeResult is one node's answer to one request.
type nodeResult struct {
	ok      bool
	err     error
	pending bool // no answer yet: the round was decided without it
}

// answer is node i's result in a fan-out.
type answer struct {
	i int
	nodeResult
}

// fanOut runs f on every node at once under ctx; the answers come on the
// returned channel as they arrive (it holds all of them: no sender waits).
func (r *Redlock) fanOut(ctx context.Context, f func(context.Context, *goredis.Client) (bool, error)) <-chan answer {
	answers := make(chan answer, len(r.nodes))
	for i, c := range r.nodes {
		go func(i int, c *goredis.Client) {
			ok, err := f(ctx, c)
			if err != nil {
				err = classify(ctx, fmt.Sprintf("node %d", i), err)
			}
			answers <- answer{i, nodeResult{ok: ok, err: err}}
		}(i, c)
	}
	return answers
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

// setAll sends SET NX PX to every node at once, under one deadline, and
// returns as soon as a majority has granted (the stragglers' SETs still
// land, and are ours to release) or every node has answered.
func (r *Redlock) setAll(ctx context.Context, key, token string, ttl time.Duration) []nodeResult {
	ctx, cancel := context.WithTimeout(ctx, nodeTimeout(ttl))
	answers := r.fanOut(ctx, func(ctx context.Context, c *goredis.Client) (bool, error) {
		return c.SetNX(ctx, key, token, ttl).Result()
	})
	res := make([]nodeResult, len(r.nodes))
	for i := range res {
		res[i].pending = true
	}
	granted := 0
	for n := 0; n < len(r.nodes); n++ {
		a := <-answers
		res[a.i] = a.nodeResult
		if a.ok {
			granted++
		}
		if granted >= r.quorum() && n+1 < len(r.nodes) {
			settleStragglers(answers, len(r.nodes)-n-1, cancel)
			return res
		}
	}
	cancel()
	return res
}

// onAll runs f on every node in parallel, each under its own timeout.
func (r *Redlock) onAll(ctx context.Context, timeout time.Duration, f func(context.Context, *goredis.Client) (bool, error)) []nodeResult {
	res := make([]nodeResult, len(r.nodes))
	var wg sync.WaitGroup
	for i, c := range r.nodes {
		wg.Add(1)
		go func(i int, c *goredis.Client) {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ok, err := f(nctx, c)
			if err != nil {
				err = classify(nctx, fmt.Sprintf("node %d", i), err)
			}
			res[i] = nodeResult{ok: ok, err: err}
		}(i, c)
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
	token := impls.NewToken()
	// maybeSet marks nodes that may hold our token: they said yes, or their
	// answer was lost, and no later unlock confirmed otherwise.
	maybeSet := make([]bool, len(r.nodes))
	for {
		start := r.clock.Now()
		res := r.setAll(ctx, key, token, ttl)
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
			return &lease{key: key, token: token, validUntil: start.Add(ttl - drift(ttl)),
				release: r.release, extend: r.extend}, nil
		}
		r.unlockAll(key, token, maybeSet)
		maybe := 0
		for _, m := range maybeSet {
			if m {
				maybe++
			}
		}
		switch {
		case unavailable > len(r.nodes)-r.quorum():
			return nil, fmt.Errorf("redlock %s: %w: %d of %d nodes unreachable: %w", key, impls.ErrUnavailable,
				unavailable, len(r.nodes), firstError(res))
		case ctx.Err() != nil && maybe >= r.quorum():
			return nil, fmt.Errorf("redlock %s: %w: %d nodes may hold our token: %w", key, impls.ErrIndeterminate, maybe, context.Cause(ctx))
		case ctx.Err() != nil:
			return nil, impls.NotAcquiredBy(ctx)
		case opt.Try:
			return nil, fmt.Errorf("%w: %s: %d of %d nodes granted", impls.ErrNotAcquired, key, granted, len(r.nodes))
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

// unlockAll deletes our token wherever it may be, clearing maybeSet for
// the nodes that answered. It runs under its own deadline: the caller's
// context may be what ended the attempt.
func (r *Redlock) unlockAll(key, token string, maybeSet []bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res := r.onAll(ctx, 100*time.Millisecond, func(ctx context.Context, c *goredis.Client) (bool, error) {
		n, err := compareAndDelete.Run(ctx, c, []string{key}, token).Int()
		return n == 1, err
	})
	for i, x := range res {
		if x.err == nil {
			maybeSet[i] = false
		}
	}
}

// release deletes our token on every node at once and returns as soon as a
// majority confirmed: no other client can then be refused for our sake
// (it needs a majority, and a majority is free). The stragglers' deletes
// go on under their own deadline, whatever the caller does with its
// context once this returns. With fewer confirmations it waits for every
// answer, to tell "not held" (our token on less than a majority) from
// "unknown".
func (r *Redlock) release(ctx context.Context, l *lease) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	answers := r.fanOut(dctx, func(ctx context.Context, c *goredis.Client) (bool, error) {
		n, err := compareAndDelete.Run(ctx, c, []string{l.key}, l.token).Int()
		return n == 1, err
	})
	res := make([]nodeResult, len(r.nodes))
	deleted, unknown := 0, 0
	for n := 0; n < len(r.nodes); n++ {
		var a answer
		select {
		case a = <-answers:
		case <-ctx.Done():
			// The caller gave up before a majority confirmed: whether
			// the lock was ours to release is unknown.
			settleStragglers(answers, len(r.nodes)-n, cancel)
			return fmt.Errorf("release %s: %w: %w", l.key, impls.ErrIndeterminate, context.Cause(ctx))
		}
		res[a.i] = a.nodeResult
		switch {
		case a.ok:
			deleted++
		case errors.Is(a.err, impls.ErrIndeterminate):
			unknown++
		}
		if deleted >= r.quorum() && n+1 < len(r.nodes) {
			settleStragglers(answers, len(r.nodes)-n-1, cancel)
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

func (r *Redlock) extend(ctx context.Context, l *lease, ttl time.Duration) error {
	start := r.clock.Now()
	res := r.onAll(ctx, nodeTimeout(ttl), func(ctx context.Context, c *goredis.Client) (bool, error) {
		n, err := compareAndPExpire.Run(ctx, c, []string{l.key}, l.token, ttl.Milliseconds()).Int()
		return n == 1, err
	})
	extended := 0
	for _, x := range res {
		if x.ok {
			extended++
		}
	}
	if extended < r.quorum() || ttl-r.clock.Now().Sub(start)-drift(ttl) <= 0 {
		return fmt.Errorf("extend %s: %w: %d of %d nodes", l.key, impls.ErrNotHeld, extended, len(r.nodes))
	}
	l.validUntil = start.Add(ttl - drift(ttl))
	return nil
}

// Close drops every connection; leases expire on their own.
func (r *Redlock) Close() error {
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

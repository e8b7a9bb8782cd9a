package locklabtest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/locklabtest"
)

// homeLock is a lock as a user writes one for their own service: SET NX PX
// to acquire, and a release that is either a plain DEL (the bug: a holder
// whose lease ran out deletes the next holder's lock) or a Lua
// compare-and-delete.
type homeLock struct {
	client   *goredis.Client
	clock    clock.Clock
	plainDel bool
}

type homeLease struct {
	l          *homeLock
	key, token string
	until      time.Time
}

var compareAndDelete = goredis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// homeApproach declares the lock; plainDel picks the buggy release.
func homeApproach(name string, plainDel bool) impls.Approach {
	return impls.Approach{Name: name, Server: impls.Redis, Nodes: 1, Safe: true, Caps: impls.Capabilities{TTL: true},
		New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
			if len(env.Endpoints[impls.Redis].Addrs) == 0 {
				return nil, fmt.Errorf("%s: no Redis endpoint", name)
			}
			c := goredis.NewClient(&goredis.Options{Addr: env.Endpoints[impls.Redis].Addrs[0], PoolSize: 1, MaxRetries: -1, ContextTimeoutEnabled: true})
			return &homeLock{client: c, clock: env.Clock, plainDel: plainDel}, nil
		}}
}

var (
	homeDelLock = homeApproach("home-del-lock", true)
	homeLuaLock = homeApproach("home-lua-lock", false)
)

// outcome maps a Redis error onto the lock's outcome errors: a refused
// connection changed nothing; anything else may have reached the server.
func outcome(ctx context.Context, err error) error {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("%w: %w", impls.ErrUnavailable, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", impls.ErrIndeterminate, errors.Join(err, ctx.Err()))
	}
	return fmt.Errorf("%w: %w", impls.ErrIndeterminate, err)
}

func (l *homeLock) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: empty", impls.ErrInvalidKey)
	}
	ttl := opt.TTL
	if ttl == 0 {
		ttl = 10 * time.Second
	}
	token := impls.NewToken()
	var until time.Time
	err := impls.Poll(ctx, key, opt, func(ctx context.Context) (bool, error) {
		start := l.clock.Now()
		ok, err := l.client.SetNX(ctx, key, token, ttl).Result()
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return false, impls.NotAcquiredBy(ctx)
			}
			return false, outcome(ctx, err)
		}
		until = start.Add(ttl)
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	return &homeLease{l: l, key: key, token: token, until: until}, nil
}

func (l *homeLock) Close() error { return l.client.Close() }

func (h *homeLease) Key() string                                 { return h.key }
func (h *homeLease) Token() (uint64, bool)                       { return 0, false }
func (h *homeLease) ValidUntil() time.Time                       { return h.until }
func (h *homeLease) Lost() <-chan struct{}                       { return nil }
func (h *homeLease) Extend(context.Context, time.Duration) error { return impls.ErrUnsupported }

func (h *homeLease) Release(ctx context.Context) error {
	var n int64
	var err error
	if h.l.plainDel {
		n, err = h.l.client.Del(ctx, h.key).Result()
	} else {
		n, err = compareAndDelete.Run(ctx, h.l.client, []string{h.key}, h.token).Int64()
	}
	switch {
	case err != nil:
		return outcome(ctx, err)
	case n == 0:
		return fmt.Errorf("%w: %s", impls.ErrNotHeld, h.key)
	}
	return nil
}

// A home-grown lock whose release is a plain DEL, run as docs/go-api.md
// says on the shipped gc-pause-past-ttl.yaml: its paused holder, woken
// past its lease, deletes the next holder's lock and a third client is
// granted while the second's lease is valid. That both-valid double grant
// is expected of no TTL lock under a client pause (the scenario expects
// double-grant:outlived and lost-update, and no rule of the matrix
// predicts more): the test must fail, and its message must name it first.
func TestRunScenarioFailsTheUnexpected(t *testing.T) {
	r := &recorder{T: t}
	r.call(func() { locklabtest.RunScenarioOn(r, homeDelLock, "../scenarios/gc-pause-past-ttl.yaml") })
	if r.fatal != "" {
		t.Fatalf("RunScenario could not run the scenario: %s", r.fatal)
	}
	if len(r.errors) == 0 {
		t.Fatal("RunScenario passed a lock whose plain DEL release let a third client in while the second's lease was valid")
	}
	msg := strings.Join(r.errors, "\n")
	t.Logf("RunScenario failed the test, as it must:\n%s", msg)
	if strings.Contains(msg, "not verified") {
		t.Fatalf("undecided, not failed: %s", msg)
	}
	first, _, _ := strings.Cut(msg, "\n")
	if !strings.Contains(first, "observed double-grant:both-valid, which nothing predicts") {
		t.Errorf("the verdict does not lead with the both-valid double grant: %q", first)
	}
	lines := strings.Split(msg, "\n")
	if len(lines) < 2 || !strings.Contains(lines[1], "decided by double-grant:both-valid: ") {
		t.Errorf("the first line after the verdict is not a both-valid incident:\n%s", msg)
	}
	if strings.Contains(msg, " more\n") && strings.Index(msg, "more") < strings.Index(msg, "decided by") {
		t.Errorf("a count of hidden lines comes before the deciding ones:\n%s", msg)
	}
}

// The same lock with a compare-and-delete release shows only what the
// scenario expects of a TTL lock without fencing, and passes.
func TestRunScenarioPassesTheExpected(t *testing.T) {
	locklabtest.RunScenario(t, homeLuaLock, "../scenarios/gc-pause-past-ttl.yaml")
}

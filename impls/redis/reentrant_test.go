package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
)

// When the hold count and the TTL of redis-reentrant disagree, on the real
// server: what each fault leaves of the count, and who then holds the key.
// Each case is written up in docs/approaches.md.

// dropReplies is the suite's fault that loses every reply from the Redis
// nodes while their requests are still applied.
func dropReplies(t *testing.T, a impls.Approach) conformance.Fault {
	t.Helper()
	h, err := conformance.HarnessFor(testCluster, a)
	if err != nil {
		t.Fatal(err)
	}
	return h.DropReplies
}

// lostReply runs op with every reply dropped; op's outcome must be
// indeterminate (it reached the server, its answer did not come back).
func lostReply(t *testing.T, fault conformance.Fault, what string, op func(ctx context.Context) error) {
	t.Helper()
	bg := context.Background()
	if err := fault.Inject(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	err := op(ctx)
	cancel()
	if herr := fault.Heal(bg); herr != nil {
		t.Fatal(herr)
	}
	if !errors.Is(err, impls.ErrIndeterminate) {
		t.Fatalf("%s with its reply dropped: err = %v, want ErrIndeterminate", what, err)
	}
}

func mustAcquire(t *testing.T, l impls.Locker, key string, opt impls.AcquireOptions) impls.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := l.Acquire(ctx, key, opt)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	return lease
}

func mustRelease(t *testing.T, lease impls.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release %s: %v", lease.Key(), err)
	}
}

// held reports whether another client finds key held.
func held(t *testing.T, l impls.Locker, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := l.Acquire(ctx, key, impls.AcquireOptions{Try: true, TTL: 30 * time.Second})
	switch {
	case errors.Is(err, impls.ErrNotAcquired):
		return true
	case err != nil:
		t.Fatalf("try %s: %v", key, err)
	}
	mustRelease(t, lease)
	return false
}

// The TTL runs out under a count of 2 (the holder paused, or working past
// it): the key goes with every hold, another client takes it with a count
// of its own, and both of the first holder's releases answer "not held".
func TestReentrantTTLOutlivesTheCount(t *testing.T) {
	key := "reentrant-ttl-outlives-count"
	a, b, c := newLocker(t, ReentrantApproach, 1), newLocker(t, ReentrantApproach, 2), newLocker(t, ReentrantApproach, 3)
	opt := impls.AcquireOptions{TTL: 300 * time.Millisecond}
	outer := mustAcquire(t, a, key, opt)
	inner := mustAcquire(t, a, key, impls.AcquireOptions{TTL: opt.TTL, Try: true})
	time.Sleep(500 * time.Millisecond)
	next := mustAcquire(t, b, key, impls.AcquireOptions{TTL: 30 * time.Second, Try: true})
	ctx := context.Background()
	for _, l := range []impls.Lease{inner, outer} {
		if err := l.Release(ctx); !errors.Is(err, impls.ErrNotHeld) {
			t.Fatalf("a release of the expired holder: err = %v, want ErrNotHeld", err)
		}
	}
	if !held(t, c, key) {
		t.Fatal("the new holder's lock went with the expired holder's releases")
	}
	mustRelease(t, next)
}

// A re-entry whose reply was lost counted up on the server, unknown to the
// holder: after its one release the key stays held, by a hold nobody will
// give back, until the TTL (reset by that release) runs out.
func TestReentrantLostReentryHoldsUntilTheTTL(t *testing.T) {
	const ttl = 2 * time.Second
	key := "reentrant-lost-reentry"
	a, b := newLocker(t, ReentrantApproach, 1), newLocker(t, ReentrantApproach, 2)
	outer := mustAcquire(t, a, key, impls.AcquireOptions{TTL: ttl})
	lostReply(t, dropReplies(t, ReentrantApproach), "a re-entry", func(ctx context.Context) error {
		_, err := a.Acquire(ctx, key, impls.AcquireOptions{TTL: ttl, Try: true})
		return err
	})
	mustRelease(t, outer)
	stalls := stall.NewWatch(t.Context())
	released := time.Now()
	if !held(t, b, key) {
		t.Fatal("the key came free at the holder's release: the lost re-entry did not count up on the server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*ttl)
	defer cancel()
	lease, err := b.Acquire(ctx, key, impls.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("the orphan hold never expired: %v", err)
	}
	took := time.Since(released)
	t.Logf("after the holder's only release the key stayed held %v (TTL %v)", took, ttl)
	if took < ttl-200*time.Millisecond || took > ttl+time.Second+stalls.Within(released, released.Add(took)) {
		t.Errorf("the orphan hold kept the key %v after the release, want about the TTL %v", took, ttl)
	}
	mustRelease(t, lease)
}

// A release whose reply was lost, retried: the latch answers the retry with
// the first try's answer, so the outer hold keeps the key.
func TestReentrantRetriedReleaseIsLatched(t *testing.T) {
	double := retriedInnerRelease(t, ReentrantApproach, "reentrant-retried-release")
	if double {
		t.Fatal("the retried release took the outer hold away too: another client was granted the key while the holder held it")
	}
}

// The same with Redisson's release of before its unlock latch (3.12's
// unlockInnerAsync): the retry counts down a second time, frees the key
// under the outer hold, and another client is granted it while both
// leases are valid. This variant lives in the test only.
func TestReentrantRetriedReleaseWithoutLatchGrantsTwice(t *testing.T) {
	noLatch := ReentrantApproach
	noLatch.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		l, err := ReentrantApproach.New(ctx, env)
		if err == nil {
			l.(*hashLock).release = releaseWithoutLatch
		}
		return l, err
	}
	if !retriedInnerRelease(t, noLatch, "reentrant-retried-release-no-latch") {
		t.Fatal("the retried release left the outer hold in place: without a latch it should count down twice")
	}
}

// releaseWithoutLatch is releaseHeld without its latch.
var releaseWithoutLatch = goredis.NewScript(releaseCount + `
return n`)

// retriedInnerRelease holds key twice, loses the reply of the inner
// release, retries it as a careful caller does, and reports whether
// another client was then granted the key while the outer lease was still
// valid.
func retriedInnerRelease(t *testing.T, a impls.Approach, key string) (doubleGrant bool) {
	t.Helper()
	holder, other := newLocker(t, a, 1), newLocker(t, a, 2)
	opt := impls.AcquireOptions{TTL: 10 * time.Second}
	// One cycle first: the scripts are cached on the server, as in a
	// client that has been running (a cold EVALSHA answers NOSCRIPT and
	// changes nothing, and that answer is what would be lost).
	mustRelease(t, mustAcquire(t, holder, key+"-warm", opt))
	outer := mustAcquire(t, holder, key, opt)
	inner := mustAcquire(t, holder, key, impls.AcquireOptions{TTL: opt.TTL, Try: true})
	lostReply(t, dropReplies(t, a), "the inner release", inner.Release)
	// The retry, as conformance's releaseSettled and most callers do.
	if err := inner.Release(context.Background()); err != nil {
		t.Fatalf("the retried release: %v", err)
	}
	// What the server counts for the holder now: 1 if only one release
	// took effect (the latch answered the retry), nothing if both did.
	direct := newClientNoPing(testCluster.DirectEndpoints()[impls.Redis].Addrs[0])
	defer direct.Close()
	count, err := direct.HGet(context.Background(), key, holder.(*hashLock).owner).Int()
	if err != nil && !errors.Is(err, goredis.Nil) {
		t.Fatal(err)
	}
	t.Logf("holds counted for the holder after the retried release: %d", count)
	doubleGrant = !held(t, other, key)
	if !doubleGrant && count != 1 {
		t.Fatalf("the holder has %d holds on the server after one of two released, want 1", count)
	}
	if doubleGrant {
		if until := time.Until(outer.ValidUntil()); until <= 0 {
			t.Fatalf("the outer lease had run out (%v) when the other client was granted the key", until)
		}
		return true
	}
	mustRelease(t, outer)
	if held(t, other, key) {
		t.Fatal("the key stayed held after the outer release")
	}
	return false
}

package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// WaitTimeout bounds WAIT 1 after a grant or an extension: the longest an
// acquire waits for the replica's acknowledgement.
const WaitTimeout = time.Second

// SentinelLuaWaitApproach: redis-sentinel-lua, plus WAIT 1 after the SET:
// a grant counts only once the replica acknowledged the key, so a failover
// to that replica keeps the lock.
//
// When WAIT answers 0 replicas (the replica is cut off or slow), the
// approach does not proceed: it deletes its own key (compare-and-delete)
// and answers "not acquired", and the acquire tries again until its
// deadline. A lock the replica may not have is never reported granted. An
// extension the replica did not acknowledge leaves the lease's validity
// where it was and answers indeterminate (the primary did extend it).
//
// What WAIT does not fix: WAIT is not a transaction. The primary applied
// the SET before WAIT began, so a failover during the WAIT loses the key
// after the primary had it; the client sees its connection fail and the
// acquire is indeterminate: if it proceeds anyway, it holds the lock
// together with the next client, which the promoted replica grants it to.
// And a client that ignored WAIT's 0 would be redis-sentinel-lua again.
var SentinelLuaWaitApproach = impls.Approach{
	Name:     "redis-sentinel-lua-wait",
	Server:   impls.RedisSentinel,
	Caps:     impls.Capabilities{TTL: true, Renewal: true},
	Safe:     true,
	Survives: "a failover to the replica: every reported grant reached it; not a client that proceeds on an indeterminate acquire",
	Summary:  "SET NX PX, then WAIT 1 (no acknowledgement: delete own key, not acquired); Lua compare-and-delete release",
	Fails:    "a failover during the WAIT loses the key after the primary applied it: the acquire is indeterminate, and a client proceeding anyway holds it twice",
	New: newSentinelSingle(func(c *goredis.Client, clk clock.Clock) *single {
		return &single{client: c, clock: clk, try: setNXPXWait, release: delIfOwner, extend: pexpireIfOwnerWait, hasTTL: true}
	}),
}

// setNXPXWait grants only what the replica acknowledged.
func setNXPXWait(ctx context.Context, s *single, key, token string, ttl time.Duration) (bool, error) {
	ok, err := setNXPX(ctx, s, key, token, ttl)
	if err != nil || !ok {
		return ok, err
	}
	acked, err := waitReplica(ctx, s)
	if err != nil {
		return false, err
	}
	if acked {
		return true, nil
	}
	// Not replicated: take the key back so nobody waits a TTL for a lock
	// no one holds. If that fails the key may stay: indeterminate.
	n, err := compareAndDelete.Run(ctx, s.client, []string{key}, token).Int()
	if err != nil {
		return false, classify(ctx, "undo unreplicated SET", err)
	}
	_ = n // 0: it expired meanwhile; either way nobody holds it for us
	return false, nil
}

// waitReplica runs WAIT 1. Any failure is indeterminate: the write before
// it was applied on the primary whatever WAIT answers, so even an error
// reply (a primary demoted during the WAIT answers UNBLOCKED) proves
// nothing about the key.
func waitReplica(ctx context.Context, s *single) (bool, error) {
	n, err := s.client.Wait(ctx, 1, WaitTimeout).Result()
	if err != nil {
		if impls.DialFailed(err) || isRedisError(err) {
			return false, fmt.Errorf("WAIT 1: %w: %w", impls.ErrIndeterminate, err)
		}
		return false, classify(ctx, "WAIT 1", err)
	}
	return n >= 1, nil
}

// pexpireIfOwnerWait extends, and moves the lease's validity only once the
// replica acknowledged the extension.
func pexpireIfOwnerWait(ctx context.Context, s *single, l *lease, ttl time.Duration) error {
	before := l.validUntil
	if err := pexpireIfOwner(ctx, s, l, ttl); err != nil {
		return err
	}
	acked, err := waitReplica(ctx, s)
	if err == nil && !acked {
		err = fmt.Errorf("extend %s: %w: the replica did not acknowledge it within %v", l.key, impls.ErrIndeterminate, WaitTimeout)
	}
	if err != nil {
		l.validUntil = before
		return err
	}
	return nil
}

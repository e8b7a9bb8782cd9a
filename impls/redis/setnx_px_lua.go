package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// SetNXPXLuaApproach: SET key token NX PX ttl; release and extend only if the
// stored token is still ours, atomically in Lua. The standard single-node
// Redis lock: safe while the node neither fails over nor jumps its clock, and
// while no holder outlives its TTL (a pause longer than the TTL lets a second
// client in; there is no fencing token to stop the first).
var SetNXPXLuaApproach = impls.Approach{
	Name:     "redis-setnx-px-lua",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock); not a restart without persistence, failover or a clock jump",
	Summary:  "SET NX PX with a random token; Lua compare-and-delete release",
	Fails:    "a holder paused past its TTL keeps writing while another holds the lock (no fencing)",
	New: newSingle("redis-setnx-px-lua", func(c *goredis.Client, clk clock.Clock) *single {
		return &single{client: c, clock: clk, try: setNXPX, release: delIfOwner, extend: pexpireIfOwner, hasTTL: true}
	}),
}

var (
	compareAndDelete = goredis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
	compareAndPExpire = goredis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
)

// setNXPX is one SET key token NX PX ttl.
func setNXPX(ctx context.Context, s *single, key, token string, ttl time.Duration) (bool, error) {
	ok, err := s.client.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return false, classify(ctx, "SET NX PX", err)
	}
	return ok, nil
}

// pexpireIfOwner extends the lease only while the key still holds our token.
func pexpireIfOwner(ctx context.Context, s *single, l *lease, ttl time.Duration) error {
	sent := s.clock.Now()
	n, err := compareAndPExpire.Run(ctx, s.client, []string{l.key}, l.token, ttl.Milliseconds()).Int()
	if err != nil {
		return classify(ctx, "extend", err)
	}
	if n == 0 {
		return fmt.Errorf("extend %s: %w", l.key, impls.ErrNotHeld)
	}
	l.validUntil = sent.Add(ttl)
	return nil
}

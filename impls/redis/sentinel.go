package redis

import (
	"context"
	"fmt"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// newSentinelClient connects one lock client to the current primary of the
// Sentinel topology through go-redis's failover client: it asks the
// Sentinels for the primary and follows their +switch-master after a
// failover. As newClient: one connection, no retries (a retried SET NX
// whose first attempt succeeded would report "not set"), deadlines on the
// socket.
func newSentinelClient(ctx context.Context, ep impls.Servers) (*goredis.Client, error) {
	if len(ep.Addrs) == 0 || ep.Sentinel == nil || ep.Sentinel.Master == "" {
		return nil, fmt.Errorf("no redis-sentinel endpoints")
	}
	// The Sentinels name the primary (and each other) at addresses of
	// their own; the route says which proxy stands in front of each.
	const dialTimeout = 2 * time.Second
	dialer := goredis.NewDialer(&goredis.Options{DialTimeout: dialTimeout}) // go-redis's own
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if via, ok := ep.Sentinel.Routes[addr]; ok {
			addr = via
		}
		return dialer(ctx, network, addr)
	}
	c := goredis.NewFailoverClient(&goredis.FailoverOptions{
		MasterName:      ep.Sentinel.Master,
		SentinelAddrs:   ep.Addrs,
		Dialer:          dial,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		// One dial a try: go-redis's default of 5 nests (each dial of the
		// primary asks every Sentinel, each with 5 dials 100 ms apart), so
		// with every server down an acquire took seconds to say so.
		DialerRetries:         1,
		PoolSize:              1,
		DialTimeout:           dialTimeout,
		ReadTimeout:           3 * time.Second,
		WriteTimeout:          3 * time.Second,
		ContextTimeoutEnabled: true,
	})
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis sentinel %s: %w: %w", ep.Sentinel.Master, impls.ErrUnavailable, err)
	}
	return c, nil
}

// newSentinelSingle builds the constructor of a one-primary approach on the
// Sentinel topology: the single-node shape, with the failover client.
func newSentinelSingle(mk func(c *goredis.Client, clk clock.Clock) *single) func(context.Context, impls.Env) (impls.Locker, error) {
	return func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		c, err := newSentinelClient(ctx, env.Endpoints[impls.RedisSentinel])
		if err != nil {
			return nil, err
		}
		return mk(c, env.Clock), nil
	}
}

// SentinelLuaApproach: redis-setnx-px-lua against a primary with an
// asynchronous replica that Sentinel fails over to. The primary grants the
// lock and replies before the key reaches the replica; if it dies in
// between, the promoted replica never saw the key and grants the lock to
// the next client while the first holder's lease is valid (the Redis
// docs' and antirez's warning, FAULTS.md F8).
var SentinelLuaApproach = impls.Approach{
	Name:     "redis-sentinel-lua",
	Server:   impls.RedisSentinel,
	Caps:     impls.Capabilities{TTL: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock), a failover after the key replicated; not a failover that loses it",
	Summary:  "SET NX PX with a random token on the Sentinel-named primary; Lua compare-and-delete release",
	Fails:    "a primary that dies before its async replica got the key: the promoted replica grants the lock again (both leases valid)",
	New: newSentinelSingle(func(c *goredis.Client, clk clock.Clock) *single {
		return &single{client: c, clock: clk, try: setNXPX, release: delIfOwner, extend: pexpireIfOwner, hasTTL: true}
	}),
}

package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/locklab/locklab/impls"
	goredis "github.com/redis/go-redis/v9"
)

// A restarted Redis node is healthy only once it has read its data back:
// while it loads its append-only file it answers INFO but refuses every
// command on a key (-LOADING), and a restart that returned then failed the
// first lock request after it (seen once in make test). 200,000 keys
// keep it loading long enough for a health check to land in that window.
// Every write is synced before its reply (appendfsync always): under
// everysec Redis answers a SET whose write it put off behind a slow fsync
// (up to 2 s on a busy disk), and the kill then lost the key the test reads.
func TestRedisRestartWaitsUntilItsDataIsLoaded(t *testing.T) {
	ctx := context.Background()
	c, err := StartLocal(ctx, LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}, Settings: persisting(t, RedisPersistAOFAlways)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := c.Nodes()[0]
	rc := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
	defer rc.Close()
	const keys, batch = 200_000, 10_000
	for i := 0; i < keys; i += batch {
		p := rc.Pipeline()
		for k := i; k < i+batch; k++ {
			p.Set(ctx, fmt.Sprintf("filler-%d", k), "x", 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := redisDo(t, n.Addr(), "SET lock me"); got != "+OK" {
		t.Fatalf("SET: %s", got)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got := redisDo(t, n.Addr(), "GET lock"); got != "me" {
		t.Fatalf("right after the restart: GET lock = %q, want \"me\"", got)
	}
}

package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/impls"
)

// The Sentinel topology, embedded and in containers: a lock key written to
// the primary while replication is held back is gone after the primary
// dies and Sentinel promotes the replica: the lost write of an
// asynchronous failover.
func TestSentinelFailoverLosesUnreplicatedKey(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on them
	for _, mode := range []string{"embedded", "docker"} {
		t.Run(mode, func(t *testing.T) {
			var c *Cluster
			if mode == "docker" {
				c = startDockerForTest(t, ForServers(impls.RedisSentinel))
				for _, n := range c.NodesOf(impls.RedisSentinel) {
					if n.ctr == nil || n.proc != nil {
						t.Fatalf("%s is not a container", n.Name)
					}
					if err := n.CanIsolate(); err == nil {
						t.Errorf("%s on the host's network says it can be cut off it", n.Name)
					}
				}
				if v := c.Versions[impls.RedisSentinel]; !strings.HasPrefix(v, "redis 7") || !strings.Contains(v, "(image "+LocalImages()[impls.Redis]+")") {
					t.Errorf("version %q, want redis 7.x from the image %s", v, LocalImages()[impls.Redis])
				}
				if got := len(sessionContainers(t, c.docker.id)); got != 5 {
					t.Fatalf("%d containers in the session, want 5 (primary, replica, 3 Sentinels)", got)
				}
			} else {
				var err error
				if c, err = StartLocal(context.Background(), ForServers(impls.RedisSentinel)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
			}
			failoverLosesUnreplicatedKey(t, c)
			if mode == "docker" {
				session := c.docker.id
				c.Close()
				if left := sessionContainers(t, session); len(left) > 0 {
					t.Errorf("containers left after Close: %v", left)
				}
			}
		})
	}
}

func failoverLosesUnreplicatedKey(t *testing.T, c *Cluster) {
	ctx := context.Background()
	byName := map[string]*Node{}
	var sentinels []string
	for _, n := range c.NodesOf(impls.RedisSentinel) {
		byName[n.Name] = n
		if n.Name != SentinelPrimary && n.Name != SentinelReplica {
			sentinels = append(sentinels, n.Addr())
		}
	}
	if len(sentinels) != 3 || byName[SentinelPrimary] == nil || byName[SentinelReplica] == nil {
		t.Fatalf("nodes: %v", byName)
	}
	fc := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: sentinels,
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer fc.Close()
	// Replication works: a key reaches the replica.
	if err := fc.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rc := goredis.NewClient(&goredis.Options{Addr: byName[SentinelReplica].Addr()})
	defer rc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for rc.Get(ctx, "before").Val() != "1" {
		if time.Now().After(deadline) {
			t.Fatal("the replica never got the key: replication is not running")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Hold replication back, take the lock on the primary, kill it: as
	// the failover fault does, whichever address the replica replicates
	// from by then.
	held, err := byName[SentinelPrimary].HoldReplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Reopen(context.Background())
	if ok, err := fc.SetNX(ctx, "lock", "holder-1", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX on the primary: %v %v", ok, err)
	}
	if err := byName[SentinelPrimary].Kill(); err != nil {
		t.Fatal(err)
	}
	// Sentinel promotes the replica (down after 3 s, then a vote; an
	// election that fails on a starved machine is tried again after the
	// 10 s failover-timeout, so the wait allows a few).
	deadline = time.Now().Add(45 * time.Second)
	for {
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica was not promoted within 45 s (ROLE %v, %v)", role, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The new primary never saw the lock: a second client is granted it
	// while the first holder's 30 s lease is valid.
	var ok bool
	deadline = time.Now().Add(10 * time.Second)
	for {
		ok, err = fc.SetNX(ctx, "lock", "holder-2", 30*time.Second).Result()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || !ok {
		t.Fatalf("after the failover SET NX = %v, %v; want the lock granted again (the key was lost)", ok, err)
	}
	if got := fc.Get(ctx, "before").Val(); got != "1" {
		t.Errorf("a replicated key was lost too: %q", got)
	}
}

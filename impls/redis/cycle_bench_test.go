package redis

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// BenchmarkCycle measures one uncontended lock cycle (acquire, release) on
// the package's real servers, one client, no history: what the lock costs,
// without locklab's recording. "bare-go-redis" is the floor any Go client
// can reach: the same two commands as redis-setnx-px-lua (SET NX PX, then
// the compare-and-delete script) on one go-redis connection, with nothing
// around them. Run with -count N: each count runs every sub-benchmark in
// turn, so the ratios come from measurements taken side by side.
//
//	go test ./impls/redis -run '^$' -bench Cycle -count 5
//
// Redlock against the single-node lock and against lib-redsync, on the same
// 5 nodes, is the same comparison for the algorithm.
func BenchmarkCycle(b *testing.B) {
	ctx := context.Background()
	b.Run("bare-go-redis", func(b *testing.B) {
		c := newClientNoPing(testCluster.DirectEndpoints()[impls.Redis].Addrs[0])
		defer c.Close()
		for i := 0; b.Loop(); i++ {
			key, token := fmt.Sprintf("bare-%d", i%64), fmt.Sprintf("t%d", i)
			ok, err := c.SetNX(ctx, key, token, 10*time.Second).Result()
			if err != nil || !ok {
				b.Fatalf("SET NX PX: %v %v", ok, err)
			}
			if n, err := compareAndDelete.Run(ctx, c, []string{key}, token).Int(); err != nil || n != 1 {
				b.Fatalf("release: %v %v", n, err)
			}
		}
	})
	// The floor of the algorithm on these nodes: the same ten commands a
	// Redlock cycle sends (SET NX PX to all five, then the compare-and-
	// delete script to all five), each round waiting for every answer
	// (as redsync does) or for a majority (as redis-redlock does, the
	// stragglers finishing in the background). Their ratio bounds what
	// redis-redlock can gain over lib-redsync at one client. The six
	// commands of redis-redlock-quorum's cycle (three nodes asked, every
	// answer needed) are its floor.
	for _, wait := range []struct {
		name           string
		nodes, answers int
	}{{"bare-fanout-all", 5, 5}, {"bare-fanout-majority", 5, 3}, {"bare-fanout-quorum-only", 3, 3}} {
		b.Run(wait.name, func(b *testing.B) {
			var nodes []*goredis.Client
			for _, a := range testCluster.DirectEndpoints()[impls.Redis].Addrs[:wait.nodes] {
				c := newClientNoPing(a)
				defer c.Close()
				nodes = append(nodes, c)
			}
			round := func(f func(*goredis.Client) bool) {
				done := make(chan bool, len(nodes))
				for _, c := range nodes {
					go func() { done <- f(c) }()
				}
				yes := 0
				for n := 0; n < len(nodes) && (yes < wait.answers || n < wait.answers); n++ {
					if <-done {
						yes++
					}
				}
				if yes < 3 {
					b.Fatalf("%d of %d nodes said yes", yes, len(nodes))
				}
			}
			for i := 0; b.Loop(); i++ {
				key, token := fmt.Sprintf("fanout-%d", i), fmt.Sprintf("t%d", i)
				round(func(c *goredis.Client) bool { return c.SetNX(ctx, key, token, time.Second).Val() })
				round(func(c *goredis.Client) bool {
					return compareAndDelete.Run(ctx, c, []string{key}, token).Val() == int64(1)
				})
			}
		})
	}
	for _, a := range []impls.Approach{SetNXPXLuaApproach, RedlockApproach, RedlockQuorumApproach, RedsyncApproach} {
		b.Run(a.Name, func(b *testing.B) {
			l, err := a.New(ctx, impls.Env{Endpoints: testCluster.DirectEndpoints(), Clock: &clock.Skewable{}, ClientID: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			for i := 0; b.Loop(); i++ {
				lease, err := l.Acquire(ctx, fmt.Sprintf("cycle-%d", i%64), impls.AcquireOptions{TTL: 10 * time.Second, Try: true})
				if err != nil {
					var held []string
					for _, a := range testCluster.DirectEndpoints()[impls.Redis].Addrs {
						c := newClientNoPing(a)
						v, _ := c.Get(ctx, fmt.Sprintf("cycle-%d", i%64)).Result()
						ttl, _ := c.PTTL(ctx, fmt.Sprintf("cycle-%d", i%64)).Result()
						held = append(held, v+"/"+ttl.String())
						c.Close()
					}
					b.Fatalf("acquire %d: %v; held %v", i, err, held)
				}
				if err := lease.Release(ctx); err != nil {
					b.Fatalf("release: %v", err)
				}
			}
		})
	}
}

// BenchmarkCycle8 is BenchmarkCycle's approaches at 8 clients at once, each
// with a connection (pool) of its own and keys of its own, so it measures
// the cost of a cycle when the clients share the machine, not the wait for
// one key: ns/op is the wall time per cycle over all eight.
//
//	go test ./impls/redis -run '^$' -bench Cycle8 -count 5
func BenchmarkCycle8(b *testing.B) {
	ctx := context.Background()
	const clients = 8
	for _, a := range []impls.Approach{SetNXPXLuaApproach, RedlockApproach, RedlockQuorumApproach, RedsyncApproach} {
		b.Run(a.Name, func(b *testing.B) {
			// RunParallel runs parallelism x GOMAXPROCS goroutines: 8 on
			// these 2 cores, each with a client of its own.
			parallelism := (clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
			n := parallelism * runtime.GOMAXPROCS(0)
			lockers := make(chan impls.Locker, n)
			for id := 1; id <= n; id++ {
				l, err := a.New(ctx, impls.Env{Endpoints: testCluster.DirectEndpoints(), Clock: &clock.Skewable{}, ClientID: id})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				lockers <- l
			}
			var next atomic.Int64
			b.SetParallelism(parallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				l := <-lockers
				me := next.Add(1)
				for i := 0; pb.Next(); i++ {
					key := fmt.Sprintf("cycle8-%d-%d", me, i%64)
					lease, err := l.Acquire(ctx, key, impls.AcquireOptions{TTL: 10 * time.Second, Try: true})
					if err != nil {
						b.Errorf("acquire %s: %v", key, err)
						return
					}
					if err := lease.Release(ctx); err != nil {
						b.Errorf("release %s: %v", key, err)
						return
					}
				}
			})
		})
	}
}

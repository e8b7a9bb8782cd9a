package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// BenchRegistered benchmarks every approach that register adds against c:
// an uncontended acquire+release cycle, and for blocking approaches the
// release-to-grant hand-off. Clients connect directly, without the proxy.
func BenchRegistered(b *testing.B, c *cluster.Cluster, register func(*impls.Registry)) {
	r := impls.NewRegistry()
	register(r)
	ep := c.DirectEndpoints()
	for _, a := range r.All() {
		b.Run(a.Name+"/cycle", func(b *testing.B) {
			l := newBenchLocker(b, a, ep, 1)
			key := fmt.Sprintf("bench-%s-%d", randomHex(4), b.N)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				lease, err := l.Acquire(ctx, key, impls.AcquireOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if err := lease.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		if a.Caps.Blocking {
			b.Run(a.Name+"/handoff", func(b *testing.B) {
				l1, l2 := newBenchLocker(b, a, ep, 1), newBenchLocker(b, a, ep, 2)
				key := "bench-handoff-" + randomHex(4)
				var total time.Duration
				for i := 0; i < b.N; i++ {
					d, err := HandOff(context.Background(), l1, l2, key, 20*time.Millisecond)
					if err != nil {
						b.Fatal(err)
					}
					total += d
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/handoff")
			})
		}
	}
}

func newBenchLocker(b *testing.B, a impls.Approach, ep impls.Endpoints, id int) impls.Locker {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := a.New(ctx, impls.Env{Endpoints: ep, Clock: &clock.Skewable{}, ClientID: id})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

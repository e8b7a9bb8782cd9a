package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
)

// A Redlock holder owns the lock only where a majority has its token. A
// former holder whose earlier release missed one node (a straggler's
// delete still in flight, or timed out there) finds its token on that node
// alone while another client holds the majority: its release must say "not
// held", not "released", and must leave the new holder's lock alone. Seen
// under load in the conformance suite's NonOwnerReleaseRefused.
func TestRedlockReleaseNeedsAMajority(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := newLocker(t, RedlockApproach, 1), newLocker(t, RedlockApproach, 2)
	key := "redlock-release-majority"
	opt := impls.AcquireOptions{TTL: 10 * time.Second, Try: true}
	stale, err := a.Acquire(ctx, key, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := stale.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A release answers once a majority let go; the stragglers' deletes
	// may still be in flight (on a loaded machine two of five were, and
	// B met three refusals). Wait for every node to have let go first.
	nodes := testCluster.DirectEndpoints()[impls.Redis].Addrs
	for deadline := time.Now().Add(5 * time.Second); ; {
		if n, err := nodesWithKey(ctx, nodes, key); err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A's release did not reach every node within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The leftover: A's token back on the last node, as if its delete had
	// not reached it.
	last := newClientNoPing(nodes[len(nodes)-1])
	defer last.Close()
	if err := last.Set(ctx, key, stale.(*lease).token, 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	// A node's answer is awaited 50 ms: beside two busy loops two of five
	// came late and B was refused. Refusals because of the leftover would
	// refuse every try; late answers do not.
	var held impls.Lease
	for try := 1; ; try++ {
		if held, err = b.Acquire(ctx, key, opt); err == nil {
			break
		}
		if try == 5 || !errors.Is(err, impls.ErrNotAcquired) {
			t.Fatalf("B's acquire with a leftover on one node of five, try %d: %v", try, err)
		}
		t.Logf("try %d: %v", try, err)
	}
	if err := stale.Release(ctx); !errors.Is(err, impls.ErrNotHeld) {
		t.Fatalf("release by the former holder with its token on one node: err = %v, want ErrNotHeld", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("B's release after the refused one: %v (B's lock must be intact)", err)
	}
}

// nodesWithKey counts the Redis nodes at addrs that have key, each asked
// on a connection of its own.
func nodesWithKey(ctx context.Context, addrs []string, key string) (int, error) {
	n := 0
	for _, a := range addrs {
		c := newClientNoPing(a)
		has, err := c.Exists(ctx, key).Result()
		c.Close()
		if err != nil {
			return n, err
		}
		n += int(has)
	}
	return n, nil
}

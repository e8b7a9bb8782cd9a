package zk

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// watchedPaths asks every server of the ensemble which paths its sessions
// watch (the four-letter word wchp) and returns those under dir.
func watchedPaths(t *testing.T, servers []string, dir string) []string {
	t.Helper()
	var out []string
	for _, a := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		answer, err := cluster.ZKFourLetter(ctx, a, "wchp")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range strings.Split(answer, "\n") {
			if strings.HasPrefix(p, dir+"/") && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// zk-sequential promises no herd: each waiter watches only its
// predecessor's node, so a release wakes one waiter. With a holder and
// five queued waiters, the ensemble must show five distinct watched nodes,
// one per waiter (watching the holder's node instead would show one, and
// every release would wake all five).
func TestSequentialWaitersWatchTheirPredecessors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := testCluster.DirectEndpoints()[impls.ZooKeeper].Addrs
	env := impls.Env{Endpoints: testCluster.DirectEndpoints(), Clock: &clock.Skewable{}}
	newLocker := func() impls.Locker {
		l, err := SequentialApproach.New(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	key := "herd-" + impls.NewToken()
	name, _ := escapeKey(key)
	dir := root + "/sequential/" + name
	held, err := newLocker().Acquire(ctx, key, impls.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 5
	var wg sync.WaitGroup
	granted := make(chan impls.Lease, waiters)
	for range waiters {
		l := newLocker()
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := l.Acquire(ctx, key, impls.AcquireOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			granted <- lease
		}()
	}
	var watched []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if watched = watchedPaths(t, servers, dir); len(watched) >= waiters {
			break
		}
	}
	if len(watched) != waiters {
		t.Errorf("%d waiters watch %d distinct nodes %v, want %d (one predecessor each)", waiters, len(watched), watched, waiters)
	}
	// Hand the lock down the queue: each release wakes the next waiter.
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		select {
		case lease := <-granted:
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("the queue did not drain")
		}
	}
	wg.Wait()
}

// A queued waiter cut off past its session loses its queue node with the
// session: Acquire must say so as ErrSessionLost (beside ErrNotAcquired),
// or as indeterminate when a call was cut off, both of which callers
// replace the client on, never as a plain "held".
func TestSequentialWaiterToldItsSessionWasLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := impls.Env{Endpoints: testCluster.DirectEndpoints(), Clock: &clock.Skewable{}}
	holder, err := SequentialApproach.New(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	key := "waiter-session-" + impls.NewToken()
	held, err := holder.Acquire(ctx, key, impls.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	const client = 9002
	ep, err := testCluster.ClientEndpoints(client)
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := SequentialApproach.New(ctx, impls.Env{Endpoints: ep, Clock: &clock.Skewable{}, ClientID: client})
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	done := make(chan error, 1)
	go func() {
		lease, err := waiter.Acquire(ctx, key, impls.AcquireOptions{})
		if err == nil {
			lease.Release(context.Background())
		}
		done <- err
	}()
	name, _ := escapeKey(key)
	dir := root + "/sequential/" + name
	servers := testCluster.DirectEndpoints()[impls.ZooKeeper].Addrs
	for deadline := time.Now().Add(10 * time.Second); len(watchedPaths(t, servers, dir)) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never queued")
		}
	}
	links, err := testCluster.ClientLinks(client, testCluster.NodesOf(impls.ZooKeeper))
	if err != nil {
		t.Fatal(err)
	}
	heal, err := chaos.InjectAll(ctx, &chaos.Partition{}, []chaos.Target{{Kind: chaos.TargetLink, Name: "waiter", Links: links}})
	if err != nil {
		t.Fatal(err)
	}
	// Held past the session's timeout, and until the ensemble has dropped
	// the waiter's watch with its session.
	time.Sleep(SessionTimeout)
	for deadline := time.Now().Add(30 * time.Second); len(watchedPaths(t, servers, dir)) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter's session never expired")
		}
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("the waiter whose session expired never returned")
	}
	// A call in flight when the connection dropped answers indeterminate
	// (seen once: "watch ...: indeterminate: zk: connection closed"),
	// which callers replace the client on too; a plain "not acquired" is
	// what must not come.
	lost := errors.Is(err, impls.ErrSessionLost) && errors.Is(err, impls.ErrNotAcquired)
	if !lost && !errors.Is(err, impls.ErrIndeterminate) {
		t.Fatalf("waiter's acquire after its session expired: err = %v, want ErrNotAcquired and ErrSessionLost (or ErrIndeterminate)", err)
	}
}

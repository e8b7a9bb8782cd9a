package redis

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
)

// WatchdogApproach is Redisson's RLock taken without a lease time: the
// reentrant hash lock (hash_lock.go) whose client renews each key it holds
// from a goroutine of its own, every TTL/3, until the key's last hold is
// released or the client dies. Redisson's default is a 30 s lease renewed
// every 10 s; here the lease is the TTL asked for (the workloads' 1-2 s, the
// Redis approaches' 10 s default), renewed every third of it. A crash frees
// the lock after one TTL, a holder working past its TTL keeps it; a holder
// whose work hangs while its process lives keeps it for as long as it hangs.
var WatchdogApproach = impls.Approach{
	Name:     "redis-watchdog",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true, Reentrant: true, Renewal: true, Watchdog: true},
	Safe:     true,
	Survives: "client crashes (the watchdog dies with the client; the TTL frees the lock); a holder working past its TTL; a hung holder (it keeps the lock, safely)",
	Summary:  "Redisson's RLock with its watchdog: the reentrant Lua hash, renewed by a goroutine of the client every TTL/3 until the last release",
	Fails:    "a holder whose work hangs keeps the lock as long as its process lives (nobody else gets it); a holder paused whole past its TTL, as any TTL lock",
	New:      newHashLock("redis-watchdog", false, true),
}

// startWatchdog renews key every TTL/3 (the TTL last asked for) while kh
// holds it, telling onRenew of each renewal. A renewal without an answer
// (cut off by its deadline, the connection lost) is tried again a tenth of
// the TTL later rather than a third: waiting a whole period after a
// renewal that took its whole deadline would send the next one at the
// lease's end, so one lost answer would cost the lock (as Redisson retries
// a failed renewal command within its lease). It stops when the stop it
// returns is called (which waits for a renewal in flight), when the client
// closes, or when a renewal finds the key no longer held.
func (h *hashLock) startWatchdog(key string, kh *keyHold, onRenew func(impls.Renewal)) (stop func()) {
	if onRenew == nil {
		onRenew = func(impls.Renewal) {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		failed := false
		for {
			h.mu.Lock()
			ttl := kh.ttl
			h.mu.Unlock()
			wait := ttl / 3
			if failed {
				wait = ttl / 10
			}
			t := time.NewTimer(wait)
			select {
			case <-quit:
				t.Stop()
				return
			case <-h.done:
				t.Stop()
				return
			case <-t.C:
			}
			select { // a stop that came with the tick wins
			case <-quit:
				return
			default:
			}
			// The TTL as it is now: an Extend while the watchdog slept
			// asked for a new one, which the renewal must not undo.
			h.mu.Lock()
			ttl = kh.ttl
			h.mu.Unlock()
			err := h.renew(key, kh, ttl, onRenew)
			if errors.Is(err, impls.ErrNotHeld) {
				return
			}
			failed = err != nil
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}

// renew makes one renewal of key to ttl. Its error wraps impls.ErrNotHeld
// when the key is no longer held: the watchdog has nothing left to keep.
func (h *hashLock) renew(key string, kh *keyHold, ttl time.Duration, onRenew func(impls.Renewal)) error {
	onRenew(impls.Renewal{})
	// A third of the TTL: a renewal never runs into the next one.
	ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
	defer cancel()
	sent := h.clock.Now()
	err := h.extend(ctx, key, ttl)
	r := impls.Renewal{Done: true, Err: err}
	if err == nil {
		h.mu.Lock()
		kh.validUntil = sent.Add(ttl)
		r.ValidUntil = kh.validUntil
		h.mu.Unlock()
	}
	onRenew(r)
	return err
}

package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/stall"
)

// renewals collects what an approach reports through AcquireOptions.OnRenew,
// with the moment each report came.
type renewals struct {
	mu  sync.Mutex
	got []reported
}

type reported struct {
	impls.Renewal
	at time.Time
}

func (r *renewals) add(x impls.Renewal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, reported{x, time.Now()})
}

func (r *renewals) all() []reported {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reported(nil), r.got...)
}

// watchdogKeepsTheLock: a live holder that never extends keeps its lock for
// many TTLs, its belief follows, and each renewal is reported (the lab
// records them as the holder's extends).
//
// A watchdog renews a third of a TTL apart, so it has two thirds of a TTL
// to spare; when this process or the server stood still longer than that
// while the lock came free, the machine, not the watchdog, let it go
// (a 300 ms TTL was free after 1.9 s at a load of 19), and the check is
// made again on a new key, five times at most. The TTL is a second: at
// 300 ms one renewal cut off by its 100 ms timeout and the next one late
// by as little as 100 ms let the key go (in a container beside two busy
// loops, with this process still for 31 ms and the server's probes late
// by 92 ms), which says more of the machine than of the watchdog.
// watchdogTries bounds the checks WatchdogKeepsTheLock makes again when
// the machine stood still: in a loaded make test a Redis container's round
// trips were late by 1.7, 3.2 and 3.2 s in three checks in a row.
const watchdogTries = 5

func (s *suite) watchdogKeepsTheLock(t T) {
	const ttl = time.Second
	a, b := s.locker(t, 1), s.locker(t, 2)
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	stalls := stall.NewWatch(wctx)
	server := s.watchPace(t, s.key(t)+"-pace")
	defer server.stop()
	var (
		log   *renewals
		lease impls.Lease
		key   string
	)
	for try := 1; ; try++ {
		key = fmt.Sprintf("%s-%d", s.key(t), try)
		// A log of its own each try: a renewal the last try's watchdog
		// sends late must not land in this one's.
		log = &renewals{}
		lease = acquire(t, a, key, impls.AcquireOptions{TTL: ttl, OnRenew: log.add})
		granted := time.Now()
		time.Sleep(3 * ttl) // the holder works on and never extends
		asked := time.Now()
		_, err := tryAcquire(b, key)
		if errors.Is(err, impls.ErrNotAcquired) {
			break
		}
		// The try's own round trip counts too: one answered 2.3 s after
		// it was sent (a container beside two busy loops, the pace's
		// probes late by 105 ms in all) measured a way to the server that
		// stood still, the watchdog's renewals on it as well.
		now := time.Now()
		still, slow := stalls.Within(granted, now), server.lateWithin(granted, now)+server.lateBy(now.Sub(asked))
		if still+slow < 2*ttl/3 || try == watchdogTries {
			t.Fatalf("a live holder's lock was free %v after its grant with a %v TTL: err = %v (this process still for %v, the server's round trips late by %v)", now.Sub(granted), ttl, err, still, slow)
		}
		t.Logf("try %d: free after %v, this process still for %v, the server's round trips late by %v: again", try, now.Sub(granted), still, slow)
		_ = lease.Release(context.Background())
	}
	if left := time.Until(lease.ValidUntil()); left <= 0 {
		t.Errorf("the holder believes its lease ran out %v ago while the watchdog keeps it", -left)
	}
	release(t, lease)
	var sent, renewed, lost int
	for _, r := range log.all() {
		switch {
		case !r.Done:
			sent++
		case r.Err == nil:
			renewed++
			if r.ValidUntil.IsZero() {
				t.Errorf("a renewal reported without the lease's new expiry")
			}
		case errors.Is(r.Err, impls.ErrIndeterminate):
			// Its answer was lost (an i/o timeout in a loaded container):
			// the lock was kept all the same, as the try above saw.
			lost++
			t.Logf("a renewal's answer was lost: %v", r.Err)
		default:
			t.Errorf("a renewal of a live holder's lease failed: %v", r.Err)
		}
	}
	t.Logf("%d renewals sent, %d renewed, %d answers lost in %v with a %v TTL", sent, renewed, lost, 3*ttl, ttl)
	if renewed < 2 {
		t.Errorf("%d renewals reported in 3 TTLs, want every one (the lab records them as the holder's extends)", renewed)
	}
	release(t, acquire(t, b, key, impls.AcquireOptions{Try: true}))
}

// watchdogStopsAtRelease: no renewal is sent once the release has returned
// (Redisson issue 7272: a renewal scheduled late outlived the unlock and
// kept an orphan key alive for ever), and the lock is free. A second's TTL,
// as WatchdogKeepsTheLock's: at 300 ms a renewal late in a loaded suite
// let the key go before the release ("not held"); a TTL after the release
// is three renewal periods.
func (s *suite) watchdogStopsAtRelease(t T) {
	const ttl = time.Second
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	for i := range 5 {
		var log renewals
		lease := acquire(t, a, key, impls.AcquireOptions{TTL: ttl, OnRenew: log.add})
		// Release at a different point of the renewal period each time,
		// once right at the grant.
		time.Sleep(time.Duration(i) * ttl / 4)
		// A watchdog starved past the lease (no renewal within its second
		// in a loaded container) lost the key before the release: "not
		// held" then is honest.
		releaseOrExpired(t, lease)
		released := time.Now()
		time.Sleep(ttl)
		for _, r := range log.all() {
			if !r.Done && r.at.After(released) {
				t.Fatalf("a renewal was sent %v after the release had returned", r.at.Sub(released))
			}
		}
		lease, err := tryAcquire(b, key)
		if err != nil {
			t.Fatalf("the lock was not free %v after its release: %v", ttl, err)
		}
		release(t, lease)
	}
}

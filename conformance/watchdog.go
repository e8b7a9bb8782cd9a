package conformance

import (
	"errors"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
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
func (s *suite) watchdogKeepsTheLock(t T) {
	const ttl = 300 * time.Millisecond
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	var log renewals
	lease := acquire(t, a, key, impls.AcquireOptions{TTL: ttl, OnRenew: log.add})
	granted := time.Now()
	time.Sleep(5 * ttl) // the holder works on and never extends
	if _, err := tryAcquire(b, key); !errors.Is(err, impls.ErrNotAcquired) {
		t.Fatalf("a live holder's lock was free %v after its grant with a %v TTL: err = %v", time.Since(granted), ttl, err)
	}
	if left := time.Until(lease.ValidUntil()); left <= 0 {
		t.Errorf("the holder believes its lease ran out %v ago while the watchdog keeps it", -left)
	}
	release(t, lease)
	var sent, renewed int
	for _, r := range log.all() {
		switch {
		case !r.Done:
			sent++
		case r.Err == nil:
			renewed++
			if r.ValidUntil.IsZero() {
				t.Errorf("a renewal reported without the lease's new expiry")
			}
		default:
			t.Errorf("a renewal of a live holder's lease failed: %v", r.Err)
		}
	}
	t.Logf("%d renewals sent, %d renewed in %v with a %v TTL", sent, renewed, 5*ttl, ttl)
	if renewed < 2 {
		t.Errorf("%d renewals reported in 5 TTLs, want every one (the lab records them as the holder's extends)", renewed)
	}
	release(t, acquire(t, b, key, impls.AcquireOptions{Try: true}))
}

// watchdogStopsAtRelease: no renewal is sent once the release has returned
// (Redisson issue 7272: a renewal scheduled late outlived the unlock and
// kept an orphan key alive for ever), and the lock is free.
func (s *suite) watchdogStopsAtRelease(t T) {
	const ttl = 300 * time.Millisecond
	key := s.key(t)
	a, b := s.locker(t, 1), s.locker(t, 2)
	for i := range 5 {
		var log renewals
		lease := acquire(t, a, key, impls.AcquireOptions{TTL: ttl, OnRenew: log.add})
		// Release at a different point of the renewal period each time,
		// once right at the grant.
		time.Sleep(time.Duration(i) * ttl / 4)
		release(t, lease)
		released := time.Now()
		time.Sleep(2 * ttl)
		for _, r := range log.all() {
			if !r.Done && r.at.After(released) {
				t.Fatalf("a renewal was sent %v after the release had returned", r.at.Sub(released))
			}
		}
		lease, err := tryAcquire(b, key)
		if err != nil {
			t.Fatalf("the lock was not free %v after its release: %v", 2*ttl, err)
		}
		release(t, lease)
	}
}

// Package memlock is an in-memory lock service (Jepsen's atom-client): no
// server, so the runner, the chaos engine and the verdict logic are tested
// in milliseconds. It is never offered as an approach to users: it proves
// nothing about any real lock.
//
// Knobs make it misbehave on purpose: Racy checks then sets (double grants
// under contention), LoseReplies makes acquires take effect but answer
// indeterminate, as a dropped reply does, ClientClockExpiry judges expiry
// by the asking client's clock, Reentrant grants a holder the key again
// (counting holds) and ReentryFreesAll makes that count a lie.
package memlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
)

// Service is the shared lock table every client of one test talks to.
type Service struct {
	// Racy: acquire reads "free", yields, then writes: two clients can both
	// be granted the lock.
	Racy bool
	// LoseReplies is the probability that a granted acquire answers
	// ErrIndeterminate (the grant stands: the lock is held by nobody who
	// knows it until its TTL ends).
	LoseReplies float64
	// ClientClockExpiry judges a lock's expiry by the clock of the client
	// asking (a lock table in shared memory whose clients each read their
	// own clock): a client whose clock runs ahead sees a held lock as
	// expired and takes it, a timing bug only a client clock fault shows.
	ClientClockExpiry bool
	// Reentrant: a client holding a key is granted it again, one hold
	// more, its lease renewed; each release gives one hold back and the
	// last frees the key.
	Reentrant bool
	// ReentryFreesAll (with Reentrant): a release frees the key whatever
	// the holds left, the re-entry bug of a lock that counts holds but
	// deletes on every release.
	ReentryFreesAll bool

	mu    sync.Mutex
	locks map[string]entry
	fence uint64
	rng   *rand.Rand
}

type entry struct {
	owner   string
	holds   int
	expires time.Time // zero: no expiry
}

// NewService returns an empty lock table; seed drives LoseReplies.
func NewService(seed uint64) *Service {
	return &Service{locks: map[string]entry{}, rng: rand.New(rand.NewPCG(seed, 1))}
}

// Approach describes the in-memory lock as an approach named name, with no
// server (Server ""), for registries built by tests.
func (s *Service) Approach(name string) impls.Approach {
	return impls.Approach{
		Name: name, Caps: impls.Capabilities{TTL: true, Fencing: true, Renewal: true, Reentrant: s.Reentrant},
		Weak: impls.Weaknesses{RacyAcquire: s.Racy}, Safe: !s.Racy,
		Summary: "in-memory lock table (tests only)", Fails: "racy when told to be",
		New: func(_ context.Context, env impls.Env) (impls.Locker, error) {
			return &Locker{svc: s, id: fmt.Sprintf("client-%d", env.ClientID), env: env}, nil
		},
	}
}

// Locker is one client of the service.
type Locker struct {
	svc    *Service
	id     string
	env    impls.Env
	n      int
	closed bool
}

// Acquire polls every 50 µs until the key is free (or expired) or ctx ends.
func (l *Locker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	l.n++
	owner := fmt.Sprintf("%s/%d", l.id, l.n)
	if l.svc.Reentrant {
		owner = l.id // a re-entrant lock's owner is the client
	}
	for {
		if lease, ok, lost := l.svc.try(key, owner, opt.TTL, l); ok {
			if lost {
				return nil, fmt.Errorf("acquire %s: reply lost: %w", key, impls.ErrIndeterminate)
			}
			return lease, nil
		}
		if opt.Try {
			return nil, fmt.Errorf("acquire %s: %w", key, impls.ErrNotAcquired)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("acquire %s: %w: %w", key, impls.ErrNotAcquired, ctx.Err())
		case <-time.After(50 * time.Microsecond):
		}
	}
}

func (s *Service) try(key, owner string, ttl time.Duration, l *Locker) (impls.Lease, bool, bool) {
	now := time.Now()
	if s.ClientClockExpiry {
		now = l.env.Clock.Now()
	}
	s.mu.Lock()
	e, held := s.locks[key]
	free := !held || (!e.expires.IsZero() && now.After(e.expires))
	if !free && s.Reentrant && e.owner == owner {
		e.holds++
		if ttl > 0 {
			e.expires = now.Add(ttl)
		}
		s.locks[key] = e
		tok := s.fence
		lost := s.LoseReplies > 0 && s.rng.Float64() < s.LoseReplies
		s.mu.Unlock()
		return l.lease(key, owner, tok, ttl), true, lost
	}
	if s.Racy {
		// Check, then set in a separate step: the window two clients need.
		s.mu.Unlock()
		time.Sleep(20 * time.Microsecond)
		s.mu.Lock()
	}
	if !free {
		s.mu.Unlock()
		return nil, false, false
	}
	ne := entry{owner: owner, holds: 1}
	if ttl > 0 {
		ne.expires = now.Add(ttl)
	}
	s.locks[key] = ne
	s.fence++
	lost := s.LoseReplies > 0 && s.rng.Float64() < s.LoseReplies
	tok := s.fence
	s.mu.Unlock()
	return l.lease(key, owner, tok, ttl), true, lost
}

// lease is a grant of key to owner, believed valid for ttl by the client's
// clock.
func (l *Locker) lease(key, owner string, token uint64, ttl time.Duration) *Lease {
	lease := &Lease{svc: l.svc, key: key, owner: owner, token: token}
	if ttl > 0 {
		lease.validUntil = l.env.Clock.Now().Add(ttl)
	}
	return lease
}

// Close drops the client: its locks stay until they expire, as a crash.
func (l *Locker) Close() error { l.closed = true; return nil }

// Lease is a granted in-memory lock.
type Lease struct {
	svc        *Service
	key, owner string
	token      uint64
	validUntil time.Time
}

// Key is the locked key.
func (l *Lease) Key() string { return l.key }

// Token is the grant's fencing token.
func (l *Lease) Token() (uint64, bool) { return l.token, true }

// ValidUntil is the holder's belief about expiry.
func (l *Lease) ValidUntil() time.Time { return l.validUntil }

// Lost: the in-memory lock cannot tell.
func (l *Lease) Lost() <-chan struct{} { return nil }

// Extend moves the expiry if the lock is still this lease's.
func (l *Lease) Extend(_ context.Context, ttl time.Duration) error {
	l.svc.mu.Lock()
	defer l.svc.mu.Unlock()
	e, ok := l.svc.locks[l.key]
	if !ok || e.owner != l.owner || (!e.expires.IsZero() && time.Now().After(e.expires)) {
		return fmt.Errorf("extend %s: %w", l.key, impls.ErrNotHeld)
	}
	e.expires = time.Now().Add(ttl)
	l.svc.locks[l.key] = e
	l.validUntil = time.Now().Add(ttl)
	return nil
}

// Release deletes the lock if it is still this lease's.
func (l *Lease) Release(_ context.Context) error {
	l.svc.mu.Lock()
	defer l.svc.mu.Unlock()
	e, ok := l.svc.locks[l.key]
	if !ok || e.owner != l.owner {
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	if e.holds > 1 && !l.svc.ReentryFreesAll {
		e.holds--
		l.svc.locks[l.key] = e
		return nil
	}
	delete(l.svc.locks, l.key)
	return nil
}

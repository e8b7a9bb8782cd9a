package planted

import (
	"context"
	"errors"
	"time"

	"github.com/locklab/locklab/impls"
)

// WaiterOverwrites gives each poll of an acquire that is waiting (a poll
// found the key held) a deadline of its own, and when a poll's reply does
// not come within it, "makes sure" with SET key token PX ttl, no NX (its
// SET NX may have gone through), and reports the lock granted. Only a
// waiter's late reply takes that path: the poll was refused, the key is
// another client's, and the plain SET overwrites it while that client's
// lease is valid. Faults on a holder, or on a client whose key was free,
// never do (a first attempt has no deadline of its own); slow replies to
// a waiter, or a server pause while one waits, do. (Dropped replies
// overwrite the key too, but drop the SET's reply: no grant to judge.)
var WaiterOverwrites = approach("planted-waiter-overwrites",
	"a waiting acquire whose poll times out takes the lock with a plain SET (no NX)",
	func(l *locker) { l.overwriteLate = true })

// RenewalFromMemory answers a renewal ok without a round trip when the
// last round trip that set the key's TTL (the acquire, a real renewal)
// was sent less than half a TTL ago, and counts the new lease from now.
// Renewing every third of a TTL, as holders do, every other renewal is
// such an answer, and the real one after it comes before the key expires:
// harmless while the holder runs. A holder stopped (paused, hung) right
// after an answer from memory believes in a lease longer than the key's
// by a third of a TTL; the key expires, another client is granted it,
// and the holder's lease is still valid by its reckoning. Stopped anywhere
// else (before its first renewal, after a real one), it believes in no
// more than the key's TTL, and only outlives its lease as every holder
// does.
var RenewalFromMemory = approach("planted-renewal-from-memory",
	"a renewal less than half a TTL after the last round trip is answered ok from memory",
	func(l *locker) { l.renewFromMemory = true })

// pollDeadline is WaiterOverwrites's own deadline on a waiting poll.
const pollDeadline = 100 * time.Millisecond

// pollOrOverwrite is WaiterOverwrites's waiting poll: SET NX under a
// deadline of its own; past it, a plain SET "makes sure".
func (l *locker) pollOrOverwrite(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	pctx, cancel := context.WithTimeout(ctx, pollDeadline)
	ok, err := l.setNX(pctx, key, token, ttl)
	late := errors.Is(err, impls.ErrIndeterminate) && impls.Expired(pctx) != nil
	cancel()
	if !late || ctx.Err() != nil {
		return ok, err
	}
	// The poll timed out: go-redis gives a new connection, and the SET
	// without NX takes the key whoever holds it (the planted mistake).
	if err := l.c.Set(ctx, key, token, ttl).Err(); err != nil {
		return false, outcome(ctx, "SET PX", err)
	}
	return true, nil
}

// fromMemory is RenewalFromMemory's shortcut: a renewal asked less than
// half of ttl after the key's TTL was last set by a round trip is answered
// at once, the lease counted from now. Elapsed time is the process's
// monotonic clock's, as a round trip is timed: a client's clock fault
// does not move it.
func (s *lease) fromMemory(ttl time.Duration) bool {
	now := s.l.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.setAt) >= ttl/2 {
		return false
	}
	s.validUntil = now.Add(ttl)
	return true
}

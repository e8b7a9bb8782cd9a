package impls

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"
)

// Backoff paces the retries of polling approaches: exponential with full
// jitter between Min and Max, so contending clients spread out.
type Backoff struct {
	Min, Max time.Duration
	n        int
}

// DefaultBackoff suits a loopback server: first retry within 1 ms.
func DefaultBackoff() Backoff { return Backoff{Min: 500 * time.Microsecond, Max: 8 * time.Millisecond} }

// Wait sleeps for the next interval or until ctx ends. It returns an error
// wrapping both ErrNotAcquired and the context's error when ctx ends first.
func (b *Backoff) Wait(ctx context.Context) error {
	d := b.Min << b.n
	if d > b.Max || d <= 0 {
		d = b.Max
	} else {
		b.n++
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return NotAcquiredBy(ctx)
	case <-t.C:
		return nil
	}
}

// NotAcquiredBy is the error for a wait that ctx ended: nothing was granted.
func NotAcquiredBy(ctx context.Context) error {
	return fmt.Errorf("%w: gave up waiting: %w", ErrNotAcquired, Expired(ctx))
}

// Poll repeats one attempt with back-off until it grants the lock, fails
// for good, or ctx ends. attempt reports true when granted, false when the
// key is held by someone else. With opt.Try it makes one attempt.
func Poll(ctx context.Context, key string, opt AcquireOptions, attempt func(context.Context) (bool, error)) error {
	backoff := DefaultBackoff()
	for {
		granted, err := attempt(ctx)
		if err != nil {
			return err
		}
		if granted {
			return nil
		}
		if opt.Try {
			return fmt.Errorf("%w: %s is held", ErrNotAcquired, key)
		}
		if err := backoff.Wait(ctx); err != nil {
			return err
		}
	}
}

// Expired returns ctx's error, or context.DeadlineExceeded if its deadline
// has passed but its timer has not fired yet: a socket deadline set from
// ctx can strike first, and the error must still say why.
func Expired(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// NewToken returns a random owner token, unique per acquire.
func NewToken() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DialFailed reports an error from failing to connect: the request was
// never sent, so nothing changed on the server.
func DialFailed(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// DialOutcome is the outcome of a request whose connection could not be
// made. Nothing was sent either way; when the caller's own deadline cut
// the dial short the server says nothing about its health, so the waiter
// simply gave up (not acquired) rather than finding the server unavailable.
func DialOutcome(ctx context.Context, op string, err error) error {
	if exp := Expired(ctx); exp != nil {
		return fmt.Errorf("%s: %w: %w (%w)", op, ErrNotAcquired, err, exp)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

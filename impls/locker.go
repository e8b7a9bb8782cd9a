// Package impls defines the lock interface every approach implements, the
// errors that tell outcomes apart, capabilities, and the registry that maps
// approach names to constructors.
package impls

import (
	"context"
	"errors"
	"time"
)

// Locker is one client's handle on a lock service. Each client of a workload
// gets its own Locker (its own connections), as a separate process would.
type Locker interface {
	// Acquire waits until the lock on key is granted or ctx ends, unless
	// opt.Try is set, in which case it makes exactly one attempt.
	Acquire(ctx context.Context, key string, opt AcquireOptions) (Lease, error)
	// Close drops the client's connections without releasing its leases,
	// which is what a crashed holder does.
	Close() error
}

// AcquireOptions tune one Acquire call.
type AcquireOptions struct {
	TTL time.Duration // lease length for approaches with expiry; 0 = the approach's default
	Try bool          // one attempt, no waiting
	// OnRenew, when set, is told of every renewal the approach makes of
	// the granted lease on its own (a watchdog), from the approach's
	// goroutine, so the caller can record it as its holder's extend. Nil:
	// nobody listens.
	OnRenew func(Renewal)
}

// Renewal is one renewal an approach made on its own, told twice: as it
// is sent (Done false) and once it is answered (Done true).
type Renewal struct {
	Done bool
	// Err is the answer: nil renewed, ErrNotHeld the lease was gone,
	// ErrIndeterminate no answer came; the outcome errors as elsewhere.
	Err error
	// ValidUntil is the lease's expiry once renewed, on the client's
	// clock; zero unless Done and renewed.
	ValidUntil time.Time
}

// Lease is a granted lock.
type Lease interface {
	Key() string
	// Token is the fencing token, where the approach yields one.
	Token() (uint64, bool)
	// ValidUntil is the expiry on the client's own (skewable) clock; zero = none.
	ValidUntil() time.Time
	// Extend moves the expiry to ttl from now. ErrNotHeld if the lease is
	// gone; ErrUnsupported where the approach has no renewal.
	Extend(ctx context.Context, ttl time.Duration) error
	// Release gives the lock up. ErrNotHeld means it was no longer ours.
	Release(ctx context.Context) error
	// Lost is closed when the client learns the lock is gone (session
	// expiry, failed renewal). Nil where the approach cannot tell.
	Lost() <-chan struct{}
}

// Outcome errors. Implementations wrap them with %w; callers test with errors.Is.
var (
	// ErrNotAcquired: someone else holds the lock (definite: nothing changed).
	ErrNotAcquired = errors.New("not acquired")
	// ErrNotHeld: release or extend of a lease that is no longer ours.
	ErrNotHeld = errors.New("not held")
	// ErrUnavailable: the servers could not be reached; nothing changed.
	ErrUnavailable = errors.New("server unavailable")
	// ErrIndeterminate: the request may or may not have taken effect (a
	// timeout or a lost reply). Histories record it as an info event.
	ErrIndeterminate = errors.New("indeterminate")
	// ErrInvalidKey: the server cannot store this key; no call was made.
	ErrInvalidKey = errors.New("invalid key")
	// ErrUnsupported: the approach does not offer this operation.
	ErrUnsupported = errors.New("not supported by this approach")
	// ErrCrashed: the client's process was killed (a client-crash fault)
	// while or before the call: its outcome is unknown, and the client
	// must do nothing more (it is replaced, as a restarted process).
	ErrCrashed = errors.New("client process killed")
	// ErrBrokenClient: the lock client itself failed, not the lock (an
	// adapter broke its protocol). Nothing can be said of the call's
	// outcome and the run cannot go on: an infrastructure failure.
	ErrBrokenClient = errors.New("lock client broken")
	// ErrSessionLost: the client's own session with the server ended
	// while it waited (it expired, and what it had queued went with
	// it). Wrapped beside ErrNotAcquired: nothing is held, and the
	// caller may go on with a new client, as the lab replaces a
	// restarted process.
	ErrSessionLost = errors.New("the client's session was lost")
)

// Capabilities are the promises an approach makes. Tests prove declared ones.
type Capabilities struct {
	TTL           bool `json:"ttl"`            // leases expire on their own
	Reentrant     bool `json:"reentrant"`      // the holder may acquire again
	Fair          bool `json:"fair"`           // FIFO grant order
	Blocking      bool `json:"blocking"`       // waiters are notified, not polling
	Fencing       bool `json:"fencing"`        // leases carry increasing tokens
	FaultTolerant bool `json:"fault_tolerant"` // survives loss of a minority of nodes
	Renewal       bool `json:"renewal"`        // leases can be extended
	LossSignal    bool `json:"loss_signal"`    // the holder is told when the lock is gone
	// FreedOnDisconnect: the server frees the lock as soon as the holder's
	// connection dies (a transaction row lock, an advisory lock).
	FreedOnDisconnect bool `json:"freed_on_disconnect"`
	// Watchdog: the approach renews its leases on its own, from a thread
	// of the client's, for as long as the client lives and until it
	// releases (Redisson's watchdog): a lease lasts as long as its
	// holder's process, not its work.
	Watchdog bool `json:"watchdog"`
}

package workload

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Kinds of critical section: what a holder does while it holds the lock.
const (
	Mutex   = "mutex"   // hold only
	Counter = "counter" // read a balance from the Store, hold, write back 3% less
	Tasks   = "tasks"   // claim a task: skip it if done, else process it
)

// Kinds lists the critical sections, for errors and help.
var kinds = []string{Mutex, Counter, Tasks}

// CheckKind reports whether kind names a critical section ("" is mutex).
func CheckKind(kind string) error {
	if kind == "" {
		return nil
	}
	for _, k := range kinds {
		if k == kind {
			return nil
		}
	}
	return fmt.Errorf("unknown workload %q (known: %s)", kind, strings.Join(kinds, ", "))
}

// Spec is the contention workload: C clients, each with its own
// connection(s), acquire one of K keys at random, hold it for a drawn time
// (doing the critical section of Kind), release it, wait the Think time,
// and start over, until Duration has passed.
//
// It is written once: a scenario file's `workload:` holds the fields with
// a yaml key (the others are set from the scenario's top level, the command
// line or the runner), the worker protocol sends it as JSON, and `bench`
// fills it from its flags.
type Spec struct {
	Kind    string `yaml:"kind" json:"kind"` // Mutex (default), Counter or Tasks
	Clients int    `yaml:"clients" json:"clients"`
	Keys    int    `yaml:"keys" json:"keys"`
	Hold    Dist   `yaml:"hold" json:"hold"`
	// Think is how long a client waits after its release before it asks
	// again (none: at once, a closed loop in which the client that let go
	// usually wins the key back; real clients do other work between two
	// critical sections, and the key changes hands).
	Think          Dist          `yaml:"think" json:"think"`
	TTL            time.Duration `yaml:"ttl" json:"ttl"`                         // lease length asked of TTL approaches
	AcquireTimeout time.Duration `yaml:"acquire-timeout" json:"acquire_timeout"` // how long one acquire may wait (default 10s)
	// Fenced makes the protected Store refuse a holder whose fencing
	// token is older than one it has seen (Counter and Tasks).
	Fenced bool `yaml:"fenced" json:"fenced"`
	// Renew makes a holder extend its lease every TTL/3 while it holds,
	// where the approach offers renewal (a watchdog, as Redisson does).
	Renew bool `yaml:"renew" json:"renew"`
	// HonourLease makes a holder stop its critical section when its lease
	// runs out by its own clock (checked before every 10 ms of work, and
	// before the counter's or the task's write): a careful holder, as the
	// Redlock algorithm asks of its clients. Without it a holder works its
	// full hold whatever its lease says.
	HonourLease bool `yaml:"honour-lease" json:"honour_lease,omitempty"`
	// Reentry is the share of holds (0 to 1) in which the holder, halfway
	// through its critical section, acquires the key it holds again and
	// gives that back before it goes on: a re-entry, for approaches that
	// declare reentrant (as code that takes a lock in a function called
	// with it held does). The re-entry's reply, refresh and count are
	// paths of their own in a re-entrant lock, which a bug can break.
	Reentry float64 `yaml:"reentry" json:"reentry,omitempty"`

	Duration  time.Duration `yaml:"-" json:"duration"`
	Seed      uint64        `yaml:"-" json:"seed"`
	Drain     time.Duration `yaml:"-" json:"drain"`      // after Duration, how long waiters may still wait (default 1s)
	KeyPrefix string        `yaml:"-" json:"key_prefix"` // keys are KeyPrefix + "k" + index
	// Finish, when closed, ends the run before Duration as if it had
	// passed: no new cycle starts, operations in flight get the Drain. A
	// case whose question was answered stops so (nil: never).
	Finish   <-chan struct{} `yaml:"-" json:"-"`
	ProcBase int             `yaml:"-" json:"proc_base"` // client i records as process ProcBase+i; replacements count on from ProcBase+Clients
	// Rate, when positive, makes the workload an open loop: lock requests
	// arrive at Rate per second over all clients (each client takes every
	// Clients-th arrival, staggered), whether or not earlier ones are done,
	// and acquire latency counts from when a request was due, not from when
	// a busy client got round to it (free of coordinated omission, as wrk2
	// measures). 0 is the closed loop: each client asks again as soon as it
	// released.
	Rate  float64  `yaml:"-" json:"rate,omitempty"`
	Store Resource `yaml:"-" json:"-"` // the protected resource, for Counter and Tasks
}

// Resource is the protected resource holders work on: the Store in the
// runner's process, or a worker's proxy to it.
type Resource interface {
	// Read returns the balance of key; token is the reader's fencing token.
	Read(proc int, key string, token *uint64) (int64, error)
	// Write sets the balance of key to v, based on the balance read.
	Write(proc int, key string, v, read int64, token *uint64) error
	// Process marks task key processed once more.
	Process(proc int, key string, token *uint64) (int, error)
	// Done reports whether task key has been processed.
	Done(key string) bool
}

// Validate reports the first unusable setting.
func (s Spec) Validate() error {
	switch {
	case s.Clients < 1:
		return fmt.Errorf("clients must be at least 1, got %d", s.Clients)
	case s.Keys < 1:
		return fmt.Errorf("keys must be at least 1, got %d", s.Keys)
	case s.Duration <= 0:
		return fmt.Errorf("duration must be positive, got %v", s.Duration)
	case s.TTL < 0:
		return fmt.Errorf("ttl must not be negative, got %v", s.TTL)
	case !(s.Reentry >= 0 && s.Reentry <= 1):
		return fmt.Errorf("reentry is a share of holds from 0 to 1, got %v", s.Reentry)
	case s.AcquireTimeout < 0:
		return fmt.Errorf("acquire timeout must not be negative, got %v", s.AcquireTimeout)
	case s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0):
		return fmt.Errorf("rate must be a positive number of requests per second (or 0 for a closed loop), got %v", s.Rate)
	case s.Rate > 0 && time.Duration(float64(time.Second)*float64(s.Clients)/s.Rate) <= 0:
		return fmt.Errorf("rate %v/s is too high to schedule", s.Rate)
	}
	if err := CheckKind(s.Kind); err != nil {
		return err
	}
	if (s.Kind == Counter || s.Kind == Tasks) && s.Store == nil {
		return fmt.Errorf("workload %q needs a store", s.Kind)
	}
	return nil
}

// Latency histograms cover 1 µs to 5 min at 3 significant digits.
const (
	histMin = 1_000
	histMax = int64(5 * time.Minute)
)

// NewHistogram returns a latency histogram in nanoseconds.
func NewHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, 3) }

// Stats is what the workload measured.
type Stats struct {
	Acquire, Release *hdrhistogram.Histogram // ns, successful operations only
	Acquired         int64                   // acquires that returned a lease
	NotAcquired      int64                   // gave up waiting (timeout or end of run)
	Indeterminate    int64                   // acquires and releases with unknown outcome (the history's info events)
	CutAtEnd         int64                   // of those, acquires cut off by the end of the run
	Errors           int64                   // unavailable and other failures
	Unavailable      int64                   // of those, the lock service could not be reached
	ReleaseNotHeld   int64                   // releases refused: the lease was already gone
	Renewals         int64                   // extends that succeeded
	Reentries        int64                   // re-entries granted (Spec.Reentry)
	Lost             int64                   // holders told their lock was gone (Lost signal, failed renewal)
	Replaced         int64                   // clients retired after an indeterminate outcome (or a crash) and replaced
	Crashed          int64                   // client processes that died (client-crash faults)
	Procs            int                     // process ids used: ProcBase .. ProcBase+Procs-1
	Elapsed          time.Duration
	FirstError       string
	// Late counts open-loop requests that started behind their schedule
	// (every client was busy when they were due).
	Late int64
}

// Merge adds o into s (histograms, counters, the first error).
func (s *Stats) Merge(o Stats) {
	s.Acquire.Merge(o.Acquire)
	s.Release.Merge(o.Release)
	s.Acquired += o.Acquired
	s.NotAcquired += o.NotAcquired
	s.Indeterminate += o.Indeterminate
	s.CutAtEnd += o.CutAtEnd
	s.Errors += o.Errors
	s.Unavailable += o.Unavailable
	s.ReleaseNotHeld += o.ReleaseNotHeld
	s.Renewals += o.Renewals
	s.Reentries += o.Reentries
	s.Lost += o.Lost
	s.Replaced += o.Replaced
	s.Crashed += o.Crashed
	s.Late += o.Late
	if s.FirstError == "" {
		s.FirstError = o.FirstError
	}
}

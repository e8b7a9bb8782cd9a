package impls

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/clock"
)

// Server is a kind of server a lock approach runs against.
type Server string

const (
	Redis     Server = "redis"
	MySQL     Server = "mysql"
	ZooKeeper Server = "zookeeper"
	Postgres  Server = "postgres"
	Etcd      Server = "etcd"
	// RedisSentinel is a Redis primary with one asynchronous replica and
	// three Sentinels that fail over to it.
	RedisSentinel Server = "redis-sentinel"
	// MySQLReplicated is a MariaDB primary with one asynchronous replica;
	// MySQLSemiSync the same with semi-synchronous replication (the
	// primary's commit waits, AFTER_SYNC, for the replica's receipt).
	// Nothing fails over on its own: the db-failover fault promotes the
	// replica, and clients follow the node that takes writes.
	MySQLReplicated Server = "mysql-replicated"
	MySQLSemiSync   Server = "mysql-semisync"
)

// Endpoints are the servers clients reach, by kind: the shape of the
// adapter protocol's hello (docs/protocol.md). A kind's entry is what its
// cluster file says its clients are given; a kind not started has none.
type Endpoints map[Server]Servers

// Servers are one kind's servers as clients should reach them (through
// the fault-injecting proxies when the cluster provides them).
type Servers struct {
	// Addrs are host:port, in node order: independent Redis masters,
	// ensemble or cluster members, a topology's nodes; approaches that use
	// one node use the first.
	Addrs []string `json:"addrs,omitempty"`
	// DSNs, for the databases, log a client in to each of Addrs (the same
	// order): go-sql-driver DSNs, pgx connection strings.
	DSNs []string `json:"dsns,omitempty"`
	// Sentinel, for a Sentinel topology, names the primary its Addrs
	// watch and where to dial the nodes they hand out.
	Sentinel *Sentinel `json:"sentinel,omitempty"`
}

// DSN is the first DSN of kind s's servers; "": none.
func (e Endpoints) DSN(s Server) string {
	if d := e[s].DSNs; len(d) > 0 {
		return d[0]
	}
	return ""
}

// Sentinel is what a client of a Sentinel topology needs besides the
// Sentinels' addresses.
type Sentinel struct {
	Master string `json:"master"`
	// Routes maps an address the Sentinels hand out (a node's own) to the
	// one a client dials instead (its proxy); an address not in it is
	// dialled as it is.
	Routes map[string]string `json:"routes,omitempty"`
}

// First is the first n of the servers (all of them when n is 0 or more
// than there are).
func (s Servers) First(n int) Servers {
	if n > 0 && len(s.Addrs) > n {
		s.Addrs = s.Addrs[:n:n]
	}
	if n > 0 && len(s.DSNs) > n {
		s.DSNs = s.DSNs[:n:n]
	}
	return s
}

// Pick is the servers at the indices idx (those in range), in that order.
func (s Servers) Pick(idx []int) Servers {
	pick := func(all []string) []string {
		if all == nil {
			return nil
		}
		out := make([]string, 0, len(idx))
		for _, i := range idx {
			if i >= 0 && i < len(all) {
				out = append(out, all[i])
			}
		}
		return out
	}
	s.Addrs, s.DSNs = pick(s.Addrs), pick(s.DSNs)
	return s
}

// Env is what a constructor gets for one client.
type Env struct {
	Endpoints Endpoints
	Clock     clock.Clock // for lease arithmetic; never time.Now directly
	ClientID  int
	// LogDir is a directory where the client may write logs of its own
	// (the run's results); "": nowhere.
	LogDir string
	// ProcessClock: a client that is a process of its own (an adapter)
	// reads a wall clock that follows Clock, so a client-clock fault moves
	// what its library reads too (libfaketime).
	ProcessClock bool
}

// Weaknesses are the known flaws an approach has on purpose; the
// conformance suite proves each one shows on the real server.
type Weaknesses struct {
	// RacyAcquire: check-then-set; two clients can both be granted the lock
	// under plain contention, no fault needed.
	RacyAcquire bool `json:"racy_acquire,omitempty"`
	// ReleaseNotOwnerChecked: release deletes whoever holds the lock now.
	ReleaseNotOwnerChecked bool `json:"release_not_owner_checked,omitempty"`
	// ReleaseCheckNotAtomic: release compares, then deletes, in two steps;
	// the lock can change hands in between.
	ReleaseCheckNotAtomic bool `json:"release_check_not_atomic,omitempty"`
	// NoExpiry: a crashed holder's lock is never freed.
	NoExpiry bool `json:"no_expiry,omitempty"`
	// ReapsLiveHolder: a monitor frees locks older than the TTL, including
	// those of holders that are alive and still working.
	ReapsLiveHolder bool `json:"reaps_live_holder,omitempty"`
}

// Approach describes one way of building a lock.
type Approach struct {
	Name   string
	Server Server
	Caps   Capabilities
	Weak   Weaknesses
	Safe   bool // expected to keep mutual exclusion without faults
	// CrashFreedAfter is how long after a holder crashes its lock comes
	// free when that is set by the client's session, not the lease TTL
	// (a ZooKeeper session timeout); 0 otherwise.
	CrashFreedAfter time.Duration
	// Nodes is how many of its server kind's servers a client uses, the first
	// ones of its Endpoints list; 0: all of them. A runner that runs cases
	// side by side gives approaches that use one node a node of their own.
	Nodes    int
	Survives string // the faults it is expected to survive
	Summary  string // one line: how it works
	Fails    string // one line: how it breaks
	// Library is the third-party library and its version an approach
	// from a file is pinned to ("go.etcd.io/etcd/client/v3 v3.5.0"), as
	// its file says; "" for the others.
	Library string
	// OwnProcess: each client New makes is an OS process of its own (an
	// adapter), which a fault can pause or kill without a worker process
	// around it; its Locker then also has Pause, Resume and Kill.
	OwnProcess bool
	// StartTimeout is how long New may take for one client (an adapter's
	// start-timeout); 0: the fleet's default.
	StartTimeout time.Duration
	New          func(ctx context.Context, env Env) (Locker, error)
}

// Registry maps approach names to their descriptions.
type Registry struct {
	byName map[string]Approach
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]Approach{}} }

// Register adds a; a duplicate name is a programming error.
func (r *Registry) Register(a Approach) {
	if _, dup := r.byName[a.Name]; dup {
		panic("impls: duplicate approach " + a.Name)
	}
	r.byName[a.Name] = a
}

// Get looks an approach up; the error lists the known names.
func (r *Registry) Get(name string) (Approach, error) {
	a, ok := r.byName[name]
	if !ok {
		if near := Nearest(name, r.Names()); near != "" {
			return Approach{}, fmt.Errorf("unknown approach %q: did you mean %q? (known: %s)", name, near, strings.Join(r.Names(), ", "))
		}
		return Approach{}, fmt.Errorf("unknown approach %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return a, nil
}

// Nearest is the name among names a mistyped one most likely meant: the
// closest by edit distance, if it is within a third of the name's length
// (at least 2 edits), else the one name that holds it whole (redlock for
// redis-redlock); "" when none is near enough, or two are as near.
func Nearest(typed string, names []string) string {
	best, bestD, tie := "", max(2, len(typed)/3)+1, false
	for _, n := range names {
		switch d := editDistance(typed, n); {
		case d < bestD:
			best, bestD, tie = n, d, false
		case d == bestD:
			tie = true
		}
	}
	if best != "" && !tie {
		return best
	}
	var holding []string
	for _, n := range names {
		if typed != "" && strings.Contains(n, typed) {
			holding = append(holding, n)
		}
	}
	if len(holding) == 1 {
		return holding[0]
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Names lists every registered approach, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// All returns every approach sorted by name.
func (r *Registry) All() []Approach {
	out := make([]Approach, 0, len(r.byName))
	for _, n := range r.Names() {
		out = append(out, r.byName[n])
	}
	return out
}

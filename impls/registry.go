package impls

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/locklab/locklab/clock"
)

// Backend is a kind of server a lock approach runs against.
type Backend string

const (
	Redis     Backend = "redis"
	MySQL     Backend = "mysql"
	ZooKeeper Backend = "zookeeper"
)

// Endpoints are the addresses of the servers, as clients should reach them
// (through the fault-injecting proxies when the cluster provides them).
type Endpoints struct {
	Redis     []string // independent masters; single-node approaches use the first
	MySQL     string   // go-sql-driver DSN
	ZooKeeper []string // ensemble members
}

// Env is what a constructor gets for one client.
type Env struct {
	Endpoints Endpoints
	Clock     clock.Clock // for lease arithmetic; never time.Now directly
	ClientID  int
}

// Approach describes one way of building a lock.
type Approach struct {
	Name    string
	Backend Backend
	Caps    Capabilities
	Safe    bool   // expected to keep mutual exclusion without faults
	Summary string // one line: how it works
	Fails   string // one line: how it breaks
	New     func(ctx context.Context, env Env) (Locker, error)
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
		return Approach{}, fmt.Errorf("unknown backend %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return a, nil
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

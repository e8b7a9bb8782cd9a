package explore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/locklab/locklab/chaos"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/workload"
)

// shapes are the targets tried for every fault kind; the runner's check
// keeps those a kind can act on (a client fault on a client: the holder,
// a waiter or any; a network fault on a node's proxy or one client's own
// links; a server fault on a node).
func shapes(a impls.Approach, serverNodes int) []chaos.Selector {
	out := []chaos.Selector{
		{Client: chaos.ClientHolder, Key: "0"},
		{Client: chaos.ClientRandom},
		{Client: chaos.ClientHolder, Key: "0", Node: chaos.NodeAll},
		{Client: chaos.ClientRandom, Node: chaos.NodeAll},
		// A client while it waits for a key another holds: a lost reply
		// or a pause there strikes an acquire that may take effect.
		{Client: chaos.ClientWaiter, Key: "0"},
		{Client: chaos.ClientWaiter, Key: "0", Node: chaos.NodeAll},
	}
	k, err := cluster.KindOf(a.Server)
	leads := err == nil && k.Leads()
	if err == nil && k.Topology {
		// Nodes with jobs of their own: the leader is the one that matters.
		return append(out, chaos.Selector{Node: chaos.NodeLeader, Server: string(a.Server)})
	}
	out = append(out, chaos.Selector{Node: chaos.NodeFirst})
	if a.Nodes == 1 || serverNodes <= 1 {
		return out // the approach uses one node: the first
	}
	out = append(out,
		chaos.Selector{Node: chaos.NodeOne},
		chaos.Selector{Node: chaos.NodeMajority},
		chaos.Selector{Node: chaos.NodeAll},
		chaos.Selector{Client: chaos.ClientHolder, Key: "0", Node: chaos.NodeOne},
		chaos.Selector{Client: chaos.ClientHolder, Key: "0", Node: chaos.NodeMajority},
	)
	if serverNodes >= 3 {
		out = append(out, chaos.Selector{Node: chaos.NodeMinority})
	}
	if leads {
		out = append(out, chaos.Selector{Node: chaos.NodeLeader}, chaos.Selector{Node: chaos.NodeFollower})
	}
	return out
}

// profile is what the generator knows of approach a: its capabilities,
// and every fault and target shape the runner says it can take (of the
// kinds in only, when given).
func (cs cases) profile(a impls.Approach, only []string) (Profile, error) {
	nodes := cluster.ForServers(a.Server).Nodes[a.Server]
	p := Profile{Approach: a.Name, Server: string(a.Server), ServerNodes: nodes, Nodes: a.Nodes,
		TTL: a.Caps.TTL, Renewal: a.Caps.Renewal, Fencing: a.Caps.Fencing, Reentrant: a.Caps.Reentrant, Watchdog: a.Caps.Watchdog, Session: a.CrashFreedAfter}
	kinds := chaos.Kinds()
	for _, k := range only {
		if !contains(kinds, k) {
			return p, fmt.Errorf("--faults: unknown fault %q (known: %s)", k, strings.Join(kinds, ", "))
		}
	}
	if len(only) > 0 {
		kinds = only
	}
	w := workload.Spec{Kind: workload.Mutex, Clients: 2, Keys: 1, Hold: workload.Dist{Kind: "fixed", A: 10 * time.Millisecond}, TTL: time.Second}
	refused := map[string]string{}
	for _, kind := range kinds {
		for _, sel := range shapes(a, nodes) {
			f := Fault{Kind: kind, Target: sel, At: time.Second}
			vary(&f, time.Second, rand.New(rand.NewPCG(1, 1)))
			s := Schedule{Approach: a.Name, Workload: w, Duration: 4 * time.Second, Seed: 1, Faults: []Fault{f}}
			if _, err := cs.caseOf(s, "probe"); err != nil {
				refused[kind] = err.Error()
				continue
			}
			p.Options = append(p.Options, Option{Kind: kind, Target: sel})
		}
	}
	for _, k := range only {
		if !p.hasKind(k) {
			return p, fmt.Errorf("--faults: %s cannot act on %s here: %s", k, a.Name, refused[k])
		}
	}
	if len(p.Options) == 0 {
		return p, fmt.Errorf("no fault can act on %s here", a.Name)
	}
	return p, nil
}

func (p Profile) hasKind(k string) bool {
	for _, o := range p.Options {
		if o.Kind == k {
			return true
		}
	}
	return false
}

// Kinds are the fault kinds p can take, each once.
func (p Profile) Kinds() []string {
	return distinct(p.Options, func(o Option) string { return o.Kind })
}

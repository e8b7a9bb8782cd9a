package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Selector is a step's target as data, resolved to Targets when the step
// fires (the holder of a key is only known then). Three shapes:
//
//	{node: one, server: zookeeper}        server nodes (TargetNode)
//	{client: holder, key: k0}             a client (TargetClient)
//	{client: "1", nodes: [redis-3, redis-4]}  one client's own links (TargetLink)
//
// node picks among the nodes of server (or all nodes without it): first
// (the node a single-node approach uses), one, minority, majority, all,
// leader, follower (one), followers (every one), or a node's name; nodes names
// them. client is a client number, random, holder (of key) or waiter (a
// client waiting for key: its acquire asked, not answered).
type Selector struct {
	Node   string   `yaml:"node,omitempty" json:"node,omitempty"`
	Nodes  []string `yaml:"nodes,omitempty" json:"nodes,omitempty"`
	Server string   `yaml:"server,omitempty" json:"server,omitempty"`
	Client string   `yaml:"client,omitempty" json:"client,omitempty"`
	Key    string   `yaml:"key,omitempty" json:"key,omitempty"`
}

// Node selection modes; anything else in Selector.Node is a node name.
const (
	NodeFirst    = "first"
	NodeOne      = "one"
	NodeMinority = "minority"
	NodeMajority = "majority"
	NodeAll      = "all"
	NodeLeader   = "leader"
	NodeFollower = "follower"
	// NodeFollowers is every follower at once: the leader left alone, without
	// its quorum (two steps of follower would ask a paused node its role).
	NodeFollowers = "followers"
)

// Client selection modes; anything else in Selector.Client is a client.
const (
	ClientRandom = "random"
	ClientHolder = "holder"
	ClientWaiter = "waiter"
)

// ErrNoTarget is what a resolver returns when the selector matches nothing
// right now (no client holds the key, no leader during an election). The
// engine records the step as failed and the run goes on.
var ErrNoTarget = errors.New("no target matches now")

// Kind is the kind of target the selector yields.
func (s Selector) Kind() TargetKind {
	switch {
	case s.Client != "" && (s.Node != "" || len(s.Nodes) > 0):
		return TargetLink
	case s.Client != "":
		return TargetClient
	default:
		return TargetNode
	}
}

// Validate checks the selector's shape; whether its names exist is the
// resolver's to say.
func (s Selector) Validate() error {
	switch {
	case s.Node == "" && len(s.Nodes) == 0 && s.Client == "":
		return errors.New("target: give node, nodes or client")
	case s.Node != "" && len(s.Nodes) > 0:
		return errors.New("target: give node or nodes, not both")
	case (s.Client == ClientHolder || s.Client == ClientWaiter) && s.Key == "":
		return fmt.Errorf("target: client: %s needs key (the key it holds or waits for)", s.Client)
	case s.Key != "" && s.Client != ClientHolder && s.Client != ClientWaiter:
		return errors.New("target: key goes with client: holder or client: waiter")
	case s.Kind() == TargetClient && s.Server != "":
		return errors.New("target: server picks nodes; a client target has none")
	}
	return nil
}

// String is the selector as a scenario writes it, for events and errors.
func (s Selector) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+": "+v)
		}
	}
	add("client", s.Client)
	add("key", s.Key)
	add("node", s.Node)
	if len(s.Nodes) > 0 {
		add("nodes", "["+strings.Join(s.Nodes, ", ")+"]")
	}
	add("server", s.Server)
	return "{" + strings.Join(parts, ", ") + "}"
}

// PickNodes applies a counting mode (first, one, minority, majority, all) to n
// candidates and returns the chosen indexes, ascending; rng makes the choice
// repeatable. A minority of a single node is refused: there is none.
func PickNodes(mode string, n int, rng *rand.Rand) ([]int, error) {
	var k int
	switch mode {
	case NodeFirst:
		if n == 0 {
			return nil, fmt.Errorf("node %s of no nodes: %w", mode, ErrNoTarget)
		}
		return []int{0}, nil
	case NodeOne:
		k = 1
	case NodeMinority:
		k = (n - 1) / 2
	case NodeMajority:
		k = n/2 + 1
	case NodeAll:
		k = n
	default:
		return nil, fmt.Errorf("node %q is not a counting mode (first, one, minority, majority, all)", mode)
	}
	if n == 0 || k == 0 {
		return nil, fmt.Errorf("node %s of %d nodes: %w", mode, n, ErrNoTarget)
	}
	idx := rng.Perm(n)[:k]
	slices.Sort(idx)
	return idx, nil
}

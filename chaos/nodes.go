package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/locklab/locklab/tcpproxy"
)

// Node is what chaos needs of a server node: its name, its shared proxy,
// whether locklab runs it (so it can be signalled), its role, and the
// process methods. cluster.Node has it; chaos imports no cluster, so a
// fault reaches a node only through this and the interfaces each fault
// asks of t.Process (Restarter, Isolator, ServerClockSetter, FailoverNode).
type Node interface {
	fmt.Stringer
	Proxy() *tcpproxy.Proxy
	Controllable() bool
	Role(ctx context.Context) (string, error)
	Process
}

// NodeTarget is the target for one server node: its shared proxy, and the
// node itself as its process when locklab runs it (an external server has
// none, so server faults are unavailable on it).
func NodeTarget(n Node) Target {
	t := Target{Kind: TargetNode, Name: n.String(), Links: []*tcpproxy.Proxy{n.Proxy()}}
	if n.Controllable() {
		t.Process = n
	}
	return t
}

// NodeTargets is NodeTarget for each node.
func NodeTargets[N Node](nodes []N) []Target {
	out := make([]Target, len(nodes))
	for i, n := range nodes {
		out[i] = NodeTarget(n)
	}
	return out
}

// LinkTarget is the target for one client's own links to nodes: a network
// fault on it hits that client alone. name is how events call the client
// ("client 7"); links are its proxies to those nodes.
func LinkTarget[N Node](name string, nodes []N, links []*tcpproxy.Proxy) Target {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.String()
	}
	return Target{Kind: TargetLink, Name: name + " -> " + strings.Join(names, ", "), Links: links}
}

// ResolveNodes picks the nodes a selector's node part names, among those
// nodesOf gives for a server kind: the selector's own (sel.Server), or
// server when it names none. node is one, minority, majority, all (chosen
// with rng), first, leader, follower (one, chosen with rng), or a node's
// name; nodes lists names. Leader and follower ask the nodes (Node.Role)
// at this moment: a node that does not answer leads nothing.
func ResolveNodes[N Node](ctx context.Context, nodesOf func(server string) []N, server string, sel Selector, rng *rand.Rand) ([]N, error) {
	if sel.Server != "" {
		server = sel.Server
	}
	cands := nodesOf(server)
	if len(cands) == 0 {
		return nil, fmt.Errorf("target %s: no %s nodes in this run", sel, server)
	}
	byName := func(name string) (N, error) {
		names := make([]string, len(cands))
		for i, n := range cands {
			if n.String() == name {
				return n, nil
			}
			names[i] = n.String()
		}
		var none N
		return none, fmt.Errorf("target %s: no node %q (nodes: %s)", sel, name, strings.Join(names, ", "))
	}
	if len(sel.Nodes) > 0 {
		out := make([]N, len(sel.Nodes))
		for i, name := range sel.Nodes {
			n, err := byName(name)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	switch sel.Node {
	case "":
		return nil, fmt.Errorf("target %s: names no nodes", sel)
	case NodeFirst, NodeOne, NodeMinority, NodeMajority, NodeAll:
		idx, err := PickNodes(sel.Node, len(cands), rng)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", sel, err)
		}
		out := make([]N, len(idx))
		for i, j := range idx {
			out[i] = cands[j]
		}
		return out, nil
	case NodeLeader, NodeFollower, NodeFollowers:
		want := sel.Node // the role asked for
		if sel.Node == NodeFollowers {
			want = NodeFollower
		}
		var match []N
		for _, n := range cands {
			if role, err := n.Role(ctx); err == nil && role == want {
				match = append(match, n)
			}
		}
		if len(match) == 0 {
			return nil, fmt.Errorf("target %s: no %s %s answers now: %w", sel, server, want, ErrNoTarget)
		}
		if sel.Node == NodeFollower {
			match = match[rng.IntN(len(match)):][:1]
		}
		return match, nil
	default:
		n, err := byName(sel.Node)
		if err != nil {
			return nil, err
		}
		return []N{n}, nil
	}
}

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// NodeTarget is the target for one server node: its shared proxy, and its
// process when locklab runs it (an external server has none, so server
// faults are unavailable on it).
func NodeTarget(n *cluster.Node) Target {
	t := Target{Kind: TargetNode, Name: n.Name, Links: []*toxiproxy.Proxy{n.Proxy()}}
	if n.Controllable() {
		t.Process = n
	}
	return t
}

// NodeTargets is NodeTarget for each node.
func NodeTargets(nodes []*cluster.Node) []Target {
	out := make([]Target, len(nodes))
	for i, n := range nodes {
		out[i] = NodeTarget(n)
	}
	return out
}

// ClientLinkTarget is the target for one client's own links to nodes: a
// network fault on it hits that client alone. client is the number the
// client's proxies were made for (Cluster.ClientEndpoints); name is how
// events call it ("client 7").
func ClientLinkTarget(c *cluster.Cluster, client int, name string, nodes []*cluster.Node) (Target, error) {
	links, err := c.ClientLinks(client, nodes)
	if err != nil {
		return Target{}, fmt.Errorf("links of %s: %w", name, err)
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return Target{Kind: TargetLink, Name: name + " -> " + strings.Join(names, ", "), Links: links}, nil
}

// ResolveNodes picks the nodes of c that a selector's node part names: the
// part of a Resolver that is the same for every runner (node targets, and
// the nodes of a client's links). server narrows the candidates to one
// server kind; node is one, minority, majority, all (chosen with rng),
// leader, follower (one, chosen with rng), or a node's name; nodes lists
// names. Leader and follower ask the nodes (Node.Role) at this moment.
func ResolveNodes(ctx context.Context, c *cluster.Cluster, sel Selector, rng *rand.Rand) ([]*cluster.Node, error) {
	candidates := c.Nodes()
	if sel.Server != "" {
		candidates = c.NodesOf(impls.Server(sel.Server))
		if len(candidates) == 0 {
			return nil, fmt.Errorf("target %s: the cluster has no %s nodes", sel, sel.Server)
		}
	}
	byName := func(name string) (*cluster.Node, error) {
		for _, n := range candidates {
			if n.Name == name {
				return n, nil
			}
		}
		var names []string
		for _, n := range candidates {
			names = append(names, n.Name)
		}
		return nil, fmt.Errorf("target %s: no node %q (nodes: %s)", sel, name, strings.Join(names, ", "))
	}
	if len(sel.Nodes) > 0 {
		out := make([]*cluster.Node, len(sel.Nodes))
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
		idx, err := PickNodes(sel.Node, len(candidates), rng)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", sel, err)
		}
		out := make([]*cluster.Node, len(idx))
		for i, j := range idx {
			out[i] = candidates[j]
		}
		return out, nil
	case NodeLeader, NodeFollower:
		var match []*cluster.Node
		for _, n := range candidates {
			role, err := n.Role(ctx)
			if err != nil {
				continue // a node that does not answer leads nothing
			}
			if role == sel.Node {
				match = append(match, n)
			}
		}
		if len(match) == 0 {
			return nil, fmt.Errorf("target %s: no %s answers now: %w", sel, sel.Node, ErrNoTarget)
		}
		if sel.Node == NodeFollower {
			match = []*cluster.Node{match[rng.IntN(len(match))]}
		}
		return match, nil
	default:
		n, err := byName(sel.Node)
		if err != nil {
			return nil, err
		}
		return []*cluster.Node{n}, nil
	}
}

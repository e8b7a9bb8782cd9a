package cluster

import (
	"errors"
	"fmt"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/locklab/locklab/impls"
)

// Per-client links. A node's own proxy is shared by every client, so a
// fault on it hits them all. Kleppmann's Redlock scenario needs client 1 cut
// from nodes D and E while client 2 still reaches them: each client that
// needs that gets its own proxy to each node, made on first use. They live
// in the cluster's toxiproxy collection (which nothing else uses; node
// proxies are kept on their Node), under names "client N -> node", and
// Close stops them with the rest.

// ClientEndpoints returns the endpoints client uses when it must be
// targetable on its own: the same servers as Endpoints, each through a
// proxy of this client's own. Calling it again returns the same proxies.
func (c *Cluster) ClientEndpoints(client int) (impls.Endpoints, error) {
	links, err := c.clientLinks(client, c.nodes)
	if err != nil {
		return impls.Endpoints{}, err
	}
	byNode := make(map[*Node]string, len(links))
	for i, n := range c.nodes {
		byNode[n] = links[i].Listen
	}
	return c.endpoints(func(n *Node) string { return byNode[n] }), nil
}

// ClientLinks returns client's own proxies to nodes, in order, making those
// that do not exist yet: a fault on them hits this client alone. They are
// the proxies behind ClientEndpoints(client).
func (c *Cluster) ClientLinks(client int, nodes []*Node) ([]*toxiproxy.Proxy, error) {
	return c.clientLinks(client, nodes)
}

func (c *Cluster) clientLinks(client int, nodes []*Node) ([]*toxiproxy.Proxy, error) {
	// closeMu orders link creation with Close, so no proxy is made after
	// the collection was cleared.
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil, errors.New("cluster is closed")
	}
	out := make([]*toxiproxy.Proxy, len(nodes))
	for i, n := range nodes {
		name := fmt.Sprintf("client %d -> %s", client, n.Name)
		if p, err := c.proxies.Collection.Get(name); err == nil {
			out[i] = p
			continue
		}
		p := toxiproxy.NewProxy(c.proxies, name, "127.0.0.1:0", n.direct)
		if err := c.proxies.Collection.Add(p, true); err != nil {
			return nil, fmt.Errorf("proxy %s: %w", name, err)
		}
		out[i] = p
	}
	return out, nil
}

// closeClientLinks stops every per-client proxy, closing its connections.
func (c *Cluster) closeClientLinks() {
	_ = c.proxies.Collection.Clear() // never fails
}

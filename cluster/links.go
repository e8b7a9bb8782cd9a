package cluster

import (
	"errors"
	"fmt"
	"sync"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/tcpproxy"
)

// Per-client links. A node's own proxy is shared by every client, so a
// fault on it hits them all. Kleppmann's Redlock scenario needs client 1 cut
// from nodes D and E while client 2 still reaches them: each client that
// needs that gets its own proxy to each node, made on first use. They live
// among the cluster's named links (node proxies are kept on their Node),
// under names "client N -> node", and Close stops them with the rest.

// ClientEndpoints returns the endpoints client uses when it must be
// targetable on its own: the same servers as Endpoints, each through a
// proxy of this client's own. Calling it again returns the same proxies.
func (c *Cluster) ClientEndpoints(client int) (impls.Endpoints, error) {
	links, err := c.ClientLinks(client, c.nodes)
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
func (c *Cluster) ClientLinks(client int, nodes []*Node) ([]*tcpproxy.Proxy, error) {
	out := make([]*tcpproxy.Proxy, len(nodes))
	for i, n := range nodes {
		p, err := c.links.get(fmt.Sprintf("client %d -> %s", client, n.Name), n.direct)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// namedLinks are proxies made on first use and found again by name.
type namedLinks struct {
	mu     sync.Mutex
	byName map[string]*tcpproxy.Proxy
	closed bool
}

func newNamedLinks() *namedLinks { return &namedLinks{byName: map[string]*tcpproxy.Proxy{}} }

// get returns the proxy called name, starting it in front of upstream if
// there is none yet.
func (l *namedLinks) get(name, upstream string) (*tcpproxy.Proxy, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("cluster is closed")
	}
	if p := l.byName[name]; p != nil {
		return p, nil
	}
	p, err := startProxy(name, upstream)
	if err != nil {
		return nil, err
	}
	l.byName[name] = p
	return p, nil
}

// lookup is the proxy called name, or nil.
func (l *namedLinks) lookup(name string) *tcpproxy.Proxy {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byName[name]
}

// stopAll stops every proxy, closing its connections; none is made after.
func (l *namedLinks) stopAll() {
	l.mu.Lock()
	l.closed = true
	stop := l.byName
	l.byName = map[string]*tcpproxy.Proxy{}
	l.mu.Unlock()
	for _, p := range stop {
		p.Stop()
	}
}

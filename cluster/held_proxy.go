package cluster

import "github.com/locklab/locklab/tcpproxy"

// newHeldProxy starts a proxy of its own (its owner stops it) in front of
// upstream that passes nothing either way: a replica pointed at it
// connects and then hears nothing, as across a cut link. The failover
// faults hold replication back with it.
func newHeldProxy(name, upstream string) (*tcpproxy.Proxy, error) {
	p, err := startProxy(name, upstream)
	if err != nil {
		return nil, err
	}
	for _, d := range []tcpproxy.Direction{tcpproxy.Upstream, tcpproxy.Downstream} {
		if _, err := p.Add(tcpproxy.Toxic{Kind: tcpproxy.Drop, Direction: d}); err != nil {
			p.Stop()
			return nil, err
		}
	}
	return p, nil
}

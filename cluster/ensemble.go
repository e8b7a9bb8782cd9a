package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
)

// Ensembles (ZooKeeper, etcd): members that know each other's ports and
// start together.

// startEnsemble starts size nodes that know each other's ports, waits until
// all are healthy (a member is healthy only once a quorum is up, so they
// start together), then puts proxies in front. A port taken in the
// meantime means a fresh set of ports.
func (c *Cluster) startEnsemble(ctx context.Context, size, portsPerNode int, build func(i int, ports []int) (*Node, error)) ([]*Node, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		nodes, err := c.tryEnsemble(ctx, size, portsPerNode, build)
		if err == nil {
			return nodes, nil
		}
		lastErr = err
		// A member that died while starting most often lost a race for
		// one of its ports; fresh ports usually cure it.
		if !errors.Is(err, errExitedDuringStartUp) && !strings.Contains(strings.ToLower(err.Error()), "in use") {
			break
		}
	}
	return nil, lastErr
}

func (c *Cluster) tryEnsemble(ctx context.Context, size, portsPerNode int, build func(i int, ports []int) (*Node, error)) ([]*Node, error) {
	ports, err := freePorts(portsPerNode * size)
	if err != nil {
		return nil, err
	}
	// Held until the members listen (see holdPorts): a member whose
	// election port was taken in the seconds its JVM took to start
	// answered on its client port, and died once its election listener
	// gave up (exit code 14).
	held := holdPorts(ports)
	defer held.release()
	nodes := make([]*Node, 0, size)
	cleanup := func() {
		for _, n := range nodes {
			n.proc.stop(0)
		}
	}
	for i := 0; i < size; i++ {
		n, err := build(i, ports)
		if err != nil {
			cleanup()
			return nil, err
		}
		n.proc.ports = ports[portsPerNode*i : portsPerNode*(i+1)]
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := n.proc.start(); err != nil {
			cleanup()
			return nil, err
		}
	}
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func(i int, n *Node) { defer wg.Done(); errs[i] = waitHealthy(ctx, n) }(i, n)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			cleanup()
			return nil, err
		}
	}
	for _, n := range nodes {
		p, err := startProxy(n.Name, n.direct)
		if err != nil {
			cleanup()
			return nil, err
		}
		n.proxy = p
	}
	return nodes, nil
}

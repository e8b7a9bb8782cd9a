package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Healthy checks every node once, in parallel, each within timeout: the
// runner's check before the first fault and after the last heal. It waits
// for a node that is still coming back (a restarted server) until ctx ends.
func (c *Cluster) Healthy(ctx context.Context, timeout time.Duration) error {
	return NodesHealthy(ctx, timeout, c.nodes)
}

// NodesHealthy is Healthy for some of a cluster's nodes.
func NodesHealthy(ctx context.Context, timeout time.Duration, nodes []*Node) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errs := make([]error, len(nodes))
	done := make(chan int)
	for i, n := range nodes {
		go func(i int, n *Node) {
			errs[i] = waitHealthy(ctx, n)
			done <- i
		}(i, n)
	}
	for range nodes {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster not healthy: %w", err)
	}
	return nil
}

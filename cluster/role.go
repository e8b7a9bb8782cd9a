package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/locklab/locklab/impls"
)

// Roles a node can have. Servers without replication (Redis masters,
// MariaDB, PostgreSQL here) are standalone.
const (
	RoleLeader     = "leader"
	RoleFollower   = "follower"
	RoleStandalone = "standalone"
)

// Role asks the node itself, at its direct address (a fault on its proxy
// must not hide the answer), whether it leads its ensemble, as its kind
// tells (a kind without a role is standalone).
// A node that does not answer (killed, paused) is an error.
func (n *Node) Role(ctx context.Context) (string, error) {
	if role := kindOfNode(n).role; role != nil {
		return role(ctx, n)
	}
	return RoleStandalone, nil
}

// ErrNoLeader: no node of the server kind says it leads (an election is
// under way, or the kind has no leader).
var ErrNoLeader = errors.New("no leader")

// Leader returns the node of kind b that leads its ensemble, asking each.
func (c *Cluster) Leader(ctx context.Context, b impls.Server) (*Node, error) {
	var errs []error
	for _, n := range c.NodesOf(b) {
		role, err := n.Role(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if role == RoleLeader {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", b, errors.Join(append([]error{ErrNoLeader}, errs...)...))
}

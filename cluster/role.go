package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

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
// must not hide the answer), whether it leads its ensemble: ZooKeeper's
// `srvr` Mode line, etcd's maintenance status (leader == own member id).
// A node that does not answer (killed, paused) is an error.
func (n *Node) Role(ctx context.Context) (string, error) {
	switch n.Server {
	case impls.ZooKeeper:
		out, err := ZKFourLetter(ctx, n.direct, "srvr")
		if err != nil {
			return "", fmt.Errorf("role of %s: %w", n.Name, err)
		}
		for _, l := range strings.Split(out, "\n") {
			if mode, ok := strings.CutPrefix(strings.TrimSpace(l), "Mode: "); ok {
				switch mode {
				case "leader", "follower", "standalone":
					return mode, nil
				}
				return "", fmt.Errorf("role of %s: mode %q", n.Name, mode)
			}
		}
		// A member without a quorum answers "This ZooKeeper instance is
		// not currently serving requests".
		return "", fmt.Errorf("role of %s: not serving: %s", n.Name, strings.TrimSpace(out))
	case impls.Etcd:
		return etcdRole(ctx, n)
	case impls.RedisSentinel:
		return sentinelRole(ctx, n)
	default:
		return RoleStandalone, nil
	}
}

// etcdRole reads the member's status through etcd's JSON gateway, which
// every etcd v3 serves on its client port: no gRPC client in cluster.
func etcdRole(ctx context.Context, n *Node) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.direct+"/v3/maintenance/status", bytes.NewReader([]byte("{}")))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	// uint64 ids come as JSON strings from the gateway.
	var st struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Header.MemberID == "" {
		return "", fmt.Errorf("role of %s: status %s: %q", n.Name, resp.Status, bytes.TrimSpace(b))
	}
	if st.Leader == st.Header.MemberID {
		return RoleLeader, nil
	}
	return RoleFollower, nil
}

// ErrNoLeader: no node of the server kind says it leads (an election is
// under way, or the kind has no leader).
var ErrNoLeader = errors.New("no leader")

// Leader returns the node of backend b that leads its ensemble, asking each.
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

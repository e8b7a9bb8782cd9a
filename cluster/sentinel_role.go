package cluster

import (
	"context"
	"fmt"
	"strings"
)

// RoleSentinel is the role of a Sentinel process in the Sentinel topology:
// it stores no data, so it is neither leader nor follower.
const RoleSentinel = "sentinel"

// sentinelRole asks a node of the Sentinel topology at its direct address
// (a fault on its proxy must not hide the answer). The Redis whose INFO
// says role:master leads: a failover moves that answer to the promoted
// replica, so the selector `node: leader` follows the current primary; one
// that says role:slave follows. A Sentinel is a sentinel once it answers.
func sentinelRole(ctx context.Context, n *Node) (string, error) {
	if n.Name != SentinelPrimary && n.Name != SentinelReplica {
		if _, err := redisCommand(ctx, n.direct, "PING"); err != nil {
			return "", fmt.Errorf("role of %s: %w", n.Name, err)
		}
		return RoleSentinel, nil
	}
	info, err := redisCommand(ctx, n.direct, "INFO replication")
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	switch role := infoField(info, "role"); role {
	case "master":
		return RoleLeader, nil
	case "slave":
		return RoleFollower, nil
	default:
		return "", fmt.Errorf("role of %s: INFO says role %q", n.Name, role)
	}
}

// infoField is one "name:value" line of an INFO reply ("" if absent).
func infoField(info, name string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return v
		}
	}
	return ""
}

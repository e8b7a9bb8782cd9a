// Package declared is what every approach locklab ships declares (its
// server kind, safe or not, its capabilities and weaknesses, how long a
// crashed holder's lock stays, how many nodes it uses), without the
// approach: no driver is linked. The matrix loads against it where the
// approaches are not (a user's go test through locklabtest), and
// impls/all's test holds every registered approach to it, so a changed
// declaration, which changes the conformance tests that prove it, is
// deliberate.
package declared

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/impls"
)

// Pinned is each shipped approach's declarations: its server kind, then
// "safe" or "unsafe", its capabilities, "weak:" and each weakness,
// "nodes:N", "crash-freed-after:D" (as Line writes them).
var Pinned = map[string]string{
	"etcd-lease":                     "etcd safe fair blocking fencing fault-tolerant loss-signal crash-freed-after:2s",
	"lib-bsm-redislock":              "redis safe ttl renewal nodes:1",
	"lib-redsync":                    "redis safe ttl fault-tolerant",
	"lib-zk-recipe":                  "zookeeper safe fair blocking fault-tolerant crash-freed-after:2s",
	"mysql-for-update":               "mysql safe blocking freed-on-disconnect",
	"mysql-for-update-replicated":    "mysql-replicated safe blocking freed-on-disconnect",
	"mysql-for-update-semisync":      "mysql-semisync safe blocking freed-on-disconnect",
	"mysql-insert-delete":            "mysql safe weak:no-expiry",
	"mysql-insert-delete-reaper":     "mysql safe ttl weak:reaps-live-holder",
	"mysql-insert-delete-replicated": "mysql-replicated safe weak:no-expiry",
	"mysql-insert-delete-semisync":   "mysql-semisync safe weak:no-expiry",
	"mysql-optimistic":               "mysql safe fencing weak:no-expiry",
	"mysql-queue-fair":               "mysql safe ttl fair renewal",
	"mysql-sharded":                  "mysql safe ttl reentrant renewal",
	"mysql-sharded-replicated":       "mysql-replicated safe ttl reentrant renewal",
	"mysql-sharded-semisync":         "mysql-semisync safe ttl reentrant renewal",
	"pg-advisory":                    "postgres safe reentrant blocking freed-on-disconnect",
	"redis-fair":                     "redis safe ttl reentrant fair renewal nodes:1",
	"redis-get-set":                  "redis unsafe ttl weak:racy-acquire nodes:1",
	"redis-redlock":                  "redis safe ttl fault-tolerant renewal",
	"redis-redlock-quorum":           "redis safe ttl fault-tolerant renewal",
	"redis-reentrant":                "redis safe ttl reentrant renewal nodes:1",
	"redis-sentinel-lua":             "redis-sentinel safe ttl renewal",
	"redis-sentinel-lua-wait":        "redis-sentinel safe ttl renewal",
	"redis-setnx":                    "redis safe weak:release-not-owner-checked weak:no-expiry nodes:1",
	"redis-setnx-px-del":             "redis safe ttl weak:release-not-owner-checked nodes:1",
	"redis-setnx-px-getdel":          "redis safe ttl weak:release-check-not-atomic nodes:1",
	"redis-setnx-px-lua":             "redis safe ttl renewal nodes:1",
	"redis-watchdog":                 "redis safe ttl reentrant renewal watchdog nodes:1",
	"redis-pubsub":                   "redis safe ttl blocking renewal nodes:1",
	"redis-pubsub-handoff":           "redis safe ttl fair blocking renewal nodes:1",
	"zk-ephemeral":                   "zookeeper safe blocking fault-tolerant loss-signal crash-freed-after:2s",
	"zk-sequential":                  "zookeeper safe fair blocking fencing fault-tolerant loss-signal crash-freed-after:2s",
}

// Line writes a's declarations as Pinned holds them.
func Line(a impls.Approach) string {
	p := []string{string(a.Server)}
	if a.Safe {
		p = append(p, "safe")
	} else {
		p = append(p, "unsafe")
	}
	p = append(p, a.Caps.Names()...)
	for _, w := range a.Weak.Names() {
		p = append(p, "weak:"+w)
	}
	if a.Nodes > 0 {
		p = append(p, fmt.Sprintf("nodes:%d", a.Nodes))
	}
	if a.CrashFreedAfter > 0 {
		p = append(p, fmt.Sprintf("crash-freed-after:%v", a.CrashFreedAfter))
	}
	return strings.Join(p, " ")
}

// parse reads a line of Pinned back into the approach it declares (no
// way to build a lock: New is nil).
func parse(name, line string) (impls.Approach, error) {
	words := strings.Fields(line)
	if len(words) < 2 {
		return impls.Approach{}, fmt.Errorf("declared %s: %q: want a server kind, then safe or unsafe", name, line)
	}
	a := impls.Approach{Name: name, Server: impls.Server(words[0]), Safe: words[1] == "safe"}
	for _, w := range words[2:] {
		var err error
		switch {
		case strings.HasPrefix(w, "weak:"):
			err = a.Weak.Set(strings.TrimPrefix(w, "weak:"))
		case strings.HasPrefix(w, "nodes:"):
			a.Nodes, err = strconv.Atoi(strings.TrimPrefix(w, "nodes:"))
		case strings.HasPrefix(w, "crash-freed-after:"):
			a.CrashFreedAfter, err = time.ParseDuration(strings.TrimPrefix(w, "crash-freed-after:"))
		default:
			err = a.Caps.Set(w)
		}
		if err != nil {
			return impls.Approach{}, fmt.Errorf("declared %s: %w", name, err)
		}
	}
	return a, nil
}

// Registry is every shipped approach as it declares itself, none able to
// build a lock.
func Registry() (*impls.Registry, error) {
	reg := impls.NewRegistry()
	for name, line := range Pinned {
		a, err := parse(name, line)
		if err != nil {
			return nil, err
		}
		reg.Register(a)
	}
	return reg, nil
}

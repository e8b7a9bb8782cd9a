package all

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/impls"
)

// promises renders what an approach declares, the declarations that pick
// which conformance tests run for it: safe or not, its capabilities, its
// weaknesses, how long a crashed holder's lock stays, how many nodes it
// uses (which lanes of a parallel run it may take).
func promises(a impls.Approach) string {
	var p []string
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

// pinned is every approach's declared promises, reviewed like code. The
// conformance suite chooses its tests from these declarations, so dropping
// one (a capability, "safe", a weakness) would silently drop the test that
// proves it: a change here must be deliberate, and this test makes it so.
var pinned = map[string]string{
	"etcd-lease":                     "safe fair blocking fencing fault-tolerant loss-signal crash-freed-after:2s",
	"lib-bsm-redislock":              "safe ttl renewal nodes:1",
	"lib-redsync":                    "safe ttl fault-tolerant",
	"lib-zk-recipe":                  "safe fair blocking fault-tolerant crash-freed-after:2s",
	"mysql-for-update":               "safe blocking freed-on-disconnect",
	"mysql-for-update-replicated":    "safe blocking freed-on-disconnect",
	"mysql-for-update-semisync":      "safe blocking freed-on-disconnect",
	"mysql-insert-delete":            "safe weak:no-expiry",
	"mysql-insert-delete-reaper":     "safe ttl weak:reaps-live-holder",
	"mysql-insert-delete-replicated": "safe weak:no-expiry",
	"mysql-insert-delete-semisync":   "safe weak:no-expiry",
	"mysql-optimistic":               "safe fencing weak:no-expiry",
	"mysql-queue-fair":               "safe ttl fair renewal",
	"mysql-sharded":                  "safe ttl reentrant renewal",
	"mysql-sharded-replicated":       "safe ttl reentrant renewal",
	"mysql-sharded-semisync":         "safe ttl reentrant renewal",
	"pg-advisory":                    "safe reentrant blocking freed-on-disconnect",
	"redis-get-set":                  "unsafe ttl weak:racy-acquire nodes:1",
	"redis-redlock":                  "safe ttl fault-tolerant renewal",
	"redis-redlock-quorum":           "safe ttl fault-tolerant renewal",
	"redis-sentinel-lua":             "safe ttl renewal",
	"redis-sentinel-lua-wait":        "safe ttl renewal",
	"redis-setnx":                    "safe weak:release-not-owner-checked weak:no-expiry nodes:1",
	"redis-setnx-px-del":             "safe ttl weak:release-not-owner-checked nodes:1",
	"redis-setnx-px-getdel":          "safe ttl weak:release-check-not-atomic nodes:1",
	"redis-setnx-px-lua":             "safe ttl renewal nodes:1",
	"redis-reentrant":                "safe ttl reentrant renewal nodes:1",
	"redis-fair":                     "safe ttl reentrant fair renewal nodes:1",
	"redis-watchdog":                 "safe ttl reentrant renewal watchdog nodes:1",
	"redis-pubsub":                   "safe ttl blocking renewal nodes:1",
	"zk-ephemeral":                   "safe blocking fault-tolerant loss-signal crash-freed-after:2s",
	"zk-sequential":                  "safe fair blocking fencing fault-tolerant loss-signal crash-freed-after:2s",
}

func TestDeclaredPromisesArePinned(t *testing.T) {
	reg := Registry()
	seen := map[string]bool{}
	for _, a := range reg.All() {
		seen[a.Name] = true
		want, ok := pinned[a.Name]
		if !ok {
			t.Errorf("%s: not in the pinned table; add %q after review", a.Name, promises(a))
			continue
		}
		if got := promises(a); got != want {
			t.Errorf("%s declares %q, pinned %q: a changed declaration changes which tests prove it", a.Name, got, want)
		}
	}
	for name := range pinned {
		if !seen[name] {
			t.Errorf("%s is pinned but no longer registered", name)
		}
	}
}

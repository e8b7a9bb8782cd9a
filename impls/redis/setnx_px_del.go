package redis

import (
	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
)

// SetNXPXDelApproach: SET NX PX, released by a plain DEL. A holder whose
// lease expired (a long GC pause, a slow request) deletes the lock of the
// client that took over, letting a third one in.
var SetNXPXDelApproach = impls.Approach{
	Name:     "redis-setnx-px-del",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true},
	Weak:     impls.Weaknesses{ReleaseNotOwnerChecked: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock), as long as no holder outlives its TTL",
	Summary:  "SET NX PX; plain DEL releases",
	Fails:    "a holder that outlived its TTL DELetes the next holder's lock: a third client gets in",
	New: newSingle("redis-setnx-px-del", func(c *goredis.Client, clk clock.Clock) *single {
		return &single{client: c, clock: clk, try: setNXPX, release: plainDel, hasTTL: true}
	}),
}

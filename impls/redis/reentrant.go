package redis

import "github.com/locklab/locklab/impls"

// ReentrantApproach is Redisson's RLock taken with a lease time (which has
// no watchdog): a hash of owner to hold count under one TTL, in Lua. The
// holder may take the key again; the key is free once it released as often
// as it acquired, or once the TTL runs out, whatever the count.
var ReentrantApproach = impls.Approach{
	Name:     "redis-reentrant",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true, Reentrant: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock, every hold with it); a retried release (its answer is latched)",
	Summary:  "Redisson's RLock: Lua hash of owner to hold count with one PEXPIRE; re-entry counts up, release counts down, deletes at 0",
	Fails:    "a holder paused past its TTL loses every hold at once; a re-entry whose reply was lost leaves a hold nobody will release (held until the TTL)",
	New:      newHashLock("redis-reentrant", false, false),
}

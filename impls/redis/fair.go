package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/impls"
)

// FairApproach is Redisson's RedissonFairLock taken with a lease time: the
// reentrant hash lock (hash_lock.go) with a FIFO queue of waiters before
// it, a list of owners in arrival order and a sorted set of the time each
// one's turn runs out. Only the head of the queue may take a free lock; a
// waiter that gives up leaves the queue; a waiter that crashed stays in it
// until its turn runs out, and nobody behind it is granted the lock before.
// Waiters poll (Redisson's are woken by a message on a channel of their own;
// the order is the queue's either way).
var FairApproach = impls.Approach{
	Name:     "redis-fair",
	Server:   impls.Redis,
	Nodes:    1,
	Caps:     impls.Capabilities{TTL: true, Reentrant: true, Fair: true, Renewal: true},
	Safe:     true,
	Survives: "client crashes (the TTL frees the lock); a waiter that gives up (it leaves the queue)",
	Summary:  "Redisson's fair lock: the reentrant Lua hash behind a Lua queue (list of waiters + sorted set of their turns' timeouts); only the head may take it",
	Fails:    "a crashed waiter at the head blocks the lock until its turn times out: the holder's TTL as it stood when the waiter queued, plus the waiter's wait time",
	New:      newHashLock("redis-fair", true, false),
}

// queueKeys are the queue's list and its sorted set of timeouts for key
// (Redisson: redisson_lock_queue:{name}, redisson_lock_timeout:{name}).
func queueKeys(key string) (queue, timeouts string) {
	return "locklab_lock_queue:{" + key + "}", "locklab_lock_timeout:{" + key + "}"
}

// waitTime is how long a waiter declares it waits, which sets when its
// turn in the queue times out: what is left of its deadline (Redisson's
// tryLock(waitTime)), or without one ten times the TTL (Redisson's
// fairLockWaitTimeout, 5 minutes, against its 30 s watchdog lease).
func waitTime(ctx context.Context, ttl time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return 10 * ttl
}

var (
	// fairAcquire is one attempt at the fair lock, Redisson's
	// tryLockInnerAsync. KEYS: the lock's hash, the queue, its timeouts.
	// ARGV: TTL ms, owner, wait ms, the client's time in ms, 1 to join the
	// queue when not granted (0: a try, which never queues). It returns
	// the owner's holds, 0 when not granted.
	//
	// First the waiters at the head whose turn has run out are dropped
	// (crashed, or gone without leaving). A free lock goes to the head of
	// the queue only (or to anyone when the queue is empty), and every
	// waiter behind moves up one turn (its timeout less one wait). The
	// holder may take it again. Anyone else joins the queue at its tail:
	// its turn runs out a wait after its predecessor's does (or, first in
	// line, after the lock's TTL runs out).
	fairAcquire = goredis.NewScript(fairAcquireSrc)

	// leaveFairQueue takes a waiter that gave up out of the queue, and
	// moves everyone behind it up one turn (Redisson's acquireFailedAsync).
	// KEYS: the queue, its timeouts; ARGV: owner, its wait ms.
	leaveFairQueue = goredis.NewScript(`
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
  i = i + 1
end
for j = i + 1, #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[j])
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return 1`)
)

// leaveQueue takes this client out of key's queue after a wait that ended
// without a grant. ctx has usually ended, so the call gets a second of its
// own. If it cannot be sent (the client crashed, the server is cut off),
// the entry stays until its turn runs out, as a crashed waiter's does.
func (h *hashLock) leaveQueue(ctx context.Context, key string, wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	q, timeouts := queueKeys(key)
	_ = leaveFairQueue.Run(ctx, h.client, []string{q, timeouts}, h.owner, wait.Milliseconds()).Err()
}

// fairAcquireSrc is fairAcquire's source (a test mutates it).
const fairAcquireSrc = `
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then
    break
  end
  local timeout = redis.call('zscore', KEYS[3], head)
  if not timeout or tonumber(timeout) > tonumber(ARGV[4]) then
    break
  end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end
if redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if not head or head == ARGV[2] then
    if head then
      redis.call('lpop', KEYS[2])
      redis.call('zrem', KEYS[3], ARGV[2])
    end
    for _, w in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
      redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), w)
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
  end
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return n
end
if ARGV[5] ~= '1' or redis.call('zscore', KEYS[3], ARGV[2]) then
  return 0
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last and redis.call('zscore', KEYS[3], last) then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[2])
redis.call('rpush', KEYS[2], ARGV[2])
return 0`

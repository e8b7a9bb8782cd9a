#!/usr/bin/python3
# locklab adapter (docs/protocol.md, v1) for redis-py's Lock (Debian python3-redis 4.3.4).
# The lock is SET key token NX PX ttl; release and extend are Lua scripts that compare the token first
# (redis/lock.py: do_acquire, LUA_RELEASE_SCRIPT, LUA_EXTEND_SCRIPT). No fencing token, no loss signal.
import json, sys
import redis
from redis.exceptions import ConnectionError as NoConnection, LockError, LockNotOwnedError, RedisError


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


hello = json.loads(sys.stdin.readline())
opts = hello.get("options") or {}
host, port = hello["servers"]["redis"][0].rsplit(":", 1)
# No client-side retries (redis-py 4.3 retries only with retry_on_timeout, off by default): a SET NX
# whose reply was lost must come back as info, never be sent again and reported "not set".
r = redis.Redis(host=host, port=int(port), socket_timeout=opts.get("socket_timeout_ms", 2000) / 1000,
                socket_connect_timeout=opts.get("socket_timeout_ms", 2000) / 1000)
default_ttl = opts.get("default_ttl_ms", 10000)  # redis-py's own default is no expiry at all
send({"type": "ready", "protocol": 1})
leases = {}  # acquire id -> (Lock, ttl_ms)

for line in sys.stdin:
    req = json.loads(line)
    op, rid = req.get("op"), req.get("id")
    if op == "close":
        break  # exit without releasing: the keys stay until their TTL, as a crashed holder's would
    try:
        if op == "acquire":
            ttl = req.get("ttl_ms") or default_ttl
            lock = r.lock(req["key"], timeout=ttl / 1000, sleep=opts.get("sleep_ms", 100) / 1000)
            # wait: True polls SET NX every `sleep` s until blocking_timeout; wait: False is one SET NX.
            # Leave a little of timeout_ms for the last round trip.
            wait = max(req["timeout_ms"] - 200, 0) / 1000
            if lock.acquire(blocking=req["wait"], blocking_timeout=wait):
                leases[rid] = (lock, ttl)
                send({"type": "ok", "id": rid, "valid_ms": ttl})
            else:  # every SET NX answered "not set": certain
                send({"type": "fail", "id": rid, "error": "not-acquired", "reason": "key is set"})
        elif op == "release":
            if req["lease"] not in leases:
                send({"type": "fail", "id": rid, "error": "not-held", "reason": "no such lease here"})
                continue
            lock, _ = leases.pop(req["lease"])
            lock.release()  # LockNotOwnedError: the script found another token (or none): nothing deleted
            send({"type": "ok", "id": rid})
        elif op == "extend":
            if req["lease"] not in leases:
                send({"type": "fail", "id": rid, "error": "not-held", "reason": "no such lease here"})
                continue
            lock, _ = leases[req["lease"]]
            ttl = req.get("ttl_ms") or default_ttl
            lock.extend(ttl / 1000, replace_ttl=True)  # PEXPIRE only if the token is still ours
            send({"type": "ok", "id": rid, "valid_ms": ttl})
        else:
            send({"type": "fail", "id": rid, "error": "unsupported", "reason": "unknown op %r" % op})
    except (LockNotOwnedError, LockError) as e:
        # the Lua script ran and found the key gone or someone else's token: nothing changed
        send({"type": "fail", "id": rid, "error": "not-held", "reason": str(e)})
    except NoConnection as e:
        # redis-py says "Error N connecting to ..." when the connection could not be made (connect() in
        # redis/connection.py): nothing was sent, so nothing changed. Any other: reset or timed out mid-call.
        if "connecting to" in str(e):
            send({"type": "fail", "id": rid, "error": "unavailable", "reason": str(e)})
        else:
            send({"type": "info", "id": rid, "reason": "ConnectionError: %s" % e})
    except RedisError as e:
        # reset or timed out: the command may have run (a lost reply) or not
        send({"type": "info", "id": rid, "reason": "%s: %s" % (type(e).__name__, e)})

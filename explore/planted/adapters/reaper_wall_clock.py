#!/usr/bin/python3
# A planted lock (explore/planted, kept for tests only): a locklab adapter (docs/protocol.md, v1) over
# Debian's python3-redis. The lock is SET key "token expires-at" NX PX ttl, expires-at on the client's wall
# clock; a waiter that finds the key held reads it, and when the expiry it states has passed by the waiter's
# own wall clock (time.time()), takes the lock over with a compare-and-set: the stale-lock reaper of the
# timestamp locks Redis's SETNX page once described. Correct while the clients' clocks agree (the server's
# PX and the stated expiry end together); a waiter whose clock runs ahead (or a holder whose clock ran
# behind when it stated its expiry) takes a lock whose holder's lease is still valid.
import json
import sys
import time
import uuid

import redis
from redis.exceptions import ConnectionError as NoConnection, RedisError

# A take-over of a stale lock and an extend are the same step: replace the value seen with a new one.
COMPARE_AND_SET = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0"""
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0"""


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def value(token, ttl_ms):
    return "%s %d" % (token, int(time.time() * 1000) + ttl_ms)


def stale(v):
    try:
        return int(v.split()[1]) < time.time() * 1000
    except (IndexError, ValueError):
        return False


hello = json.loads(sys.stdin.readline())
host, port = hello["servers"]["redis"][0].rsplit(":", 1)
r = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2, decode_responses=True)
compare_and_set, release = r.register_script(COMPARE_AND_SET), r.register_script(RELEASE)
send({"type": "ready", "protocol": 1})
leases = {}  # acquire id -> (key, the value the lock holds)


def ttl_of(req):
    return req.get("ttl_ms") or 10000


def acquire(req):
    key, ttl = req["key"], ttl_of(req)
    deadline = time.monotonic() + max(req["timeout_ms"] - 100, 0) / 1000
    token = uuid.uuid4().hex
    while True:
        v = value(token, ttl)
        if r.set(key, v, nx=True, px=ttl):
            return v
        held = r.get(key)
        if held is not None and stale(held) and compare_and_set(keys=[key], args=[held, v, ttl]) == 1:
            return v
        if not req["wait"] or time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


for line in sys.stdin:
    req = json.loads(line)
    op, rid = req.get("op"), req.get("id")
    if op == "close":
        break
    try:
        if op == "acquire":
            v = acquire(req)
            if v is None:
                send({"type": "fail", "id": rid, "error": "not-acquired", "reason": "held, and not stale by this clock"})
                continue
            leases[rid] = (req["key"], v)
            send({"type": "ok", "id": rid, "valid_ms": ttl_of(req)})
        elif op in ("release", "extend"):
            if req["lease"] not in leases:
                send({"type": "fail", "id": rid, "error": "not-held", "reason": "no such lease here"})
                continue
            key, v = leases[req["lease"]]
            if op == "release":
                del leases[req["lease"]]
                done = release(keys=[key], args=[v]) == 1
            else:
                nv = value(v.split()[0], ttl_of(req))
                done = compare_and_set(keys=[key], args=[v, nv, ttl_of(req)]) == 1
                if done:
                    leases[req["lease"]] = (key, nv)
            if done:
                send({"type": "ok", "id": rid, "valid_ms": ttl_of(req)} if op == "extend" else {"type": "ok", "id": rid})
            else:
                send({"type": "fail", "id": rid, "error": "not-held", "reason": "the lock holds another value"})
        else:
            send({"type": "fail", "id": rid, "error": "unsupported", "reason": "unknown op %r" % op})
    except NoConnection as e:
        if "connecting to" in str(e):
            send({"type": "fail", "id": rid, "error": "unavailable", "reason": str(e)})
        else:
            send({"type": "info", "id": rid, "reason": "ConnectionError: %s" % e})
    except RedisError as e:
        send({"type": "info", "id": rid, "reason": "%s: %s" % (type(e).__name__, e)})

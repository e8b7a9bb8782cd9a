#!/usr/bin/python3
# locklab adapter (docs/protocol.md, v1) for python-etcd3's Lock (Debian python3-etcd3 0.12.0, etcd 3.4): grant a
# lease, then a transaction "if the key /locks/<name> does not exist, put it with our uuid1 on that lease"
# (etcd3/locks.py, _acquire). Waiting watches the key and tries again (every waiter wakes: not fair). Nothing
# keeps the lease alive: a holder that does not call refresh() in time loses the key silently.
import concurrent.futures, json, math, os, sys
import etcd3, grpc, time
from etcd3.exceptions import Etcd3Exception, WatchTimedOut


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


hello = json.loads(sys.stdin.readline())
opts = hello.get("options") or {}
# python-etcd3 0.12 talks to one endpoint (no failover). Without a timeout its calls wait forever.
host, port = hello["servers"]["etcd"][0].rsplit(":", 1)
etcd = etcd3.client(host=host, port=int(port), timeout=opts.get("rpc_timeout_ms", 2000) / 1000)
send({"type": "ready", "protocol": 1})
leases = {}  # acquire id -> Lock
worker = concurrent.futures.ThreadPoolExecutor(1)  # answer info when a call outlives the caller's time


def acquire(req):
    # leases are whole seconds (etcd raises one below its minimum, 1.5 election timeouts, to that)
    lock = etcd.lock(req["key"], ttl=max(1, math.ceil((req.get("ttl_ms") or opts.get("default_ttl_ms", 10000)) / 1000)))
    # acquire(timeout=0) is exactly one transaction. Waiting (timeout > 0) is broken on Debian: locks.py's
    # wait(previous_attempt_number, delay_since_first_attempt) (line 72) is tenacity's old signature and
    # tenacity 8 raises TypeError. So wait as locks.py means to: try, then watch_once the key, until the end.
    end = time.monotonic() + max(req["timeout_ms"] - 300, 0) / 1000
    while not lock.acquire(timeout=0):  # each attempt: a new lease, the put-if-absent transaction
        if not req["wait"] or time.monotonic() >= end:  # every transaction found the key: certain
            return {"type": "fail", "error": "not-acquired", "reason": "key exists"}
        try:  # a delete between the failed transaction and the watch's start is missed (as in locks.py)
            etcd.watch_once(lock.key, timeout=end - time.monotonic())
        except WatchTimedOut:
            pass
    leases[req["id"]] = lock
    # The fencing token: the key's create_revision, etcd's global revision at the transaction that created
    # it, which only grows. Lock keeps no revision (locks.py has a TODO for it), so read the key back.
    value, meta = etcd.get(lock.key)
    if value != lock.uuid:  # granted, but our lease ran out before the read: the grant already ended
        return {"type": "info", "reason": "granted, but the key was gone before its revision was read"}
    return {"type": "ok", "token": meta.create_revision, "valid_ms": lock.lease.ttl * 1000}


def release(req):
    lock = leases.pop(req["lease"], None)
    # release is a transaction "if the value is our uuid, delete": False means it was not ours any more
    if lock is None or not lock.release():
        return {"type": "fail", "error": "not-held", "reason": "the key is not ours"}
    return {"type": "ok"}


def extend(req):
    lock = leases.get(req["lease"])
    if lock is None:
        return {"type": "fail", "error": "not-held", "reason": "no such lease here"}
    # A keep-alive renews the lease to its granted TTL: etcd cannot give it another one, so valid_ms says
    # what it got. TTL 0 answers a lease that expired (and took the key with it).
    ttl = lock.refresh()[0].TTL
    if ttl <= 0:
        return {"type": "fail", "error": "not-held", "reason": "lease expired"}
    return {"type": "ok", "valid_ms": ttl * 1000}


ops = {"acquire": acquire, "release": release, "extend": extend}
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "close":
        os._exit(0)  # without revoking: the lease runs out, as a crashed holder's would
    fn = ops.get(req.get("op"))
    try:
        ans = worker.submit(fn, req).result(req.get("timeout_ms", 5000) / 1000) if fn else \
            {"type": "fail", "error": "unsupported", "reason": "unknown op"}
    except concurrent.futures.TimeoutError:
        ans = {"type": "info", "reason": "no answer from etcd in time"}
    except (Etcd3Exception, grpc.RpcError) as e:
        # unavailable or deadline exceeded: the transaction may have been applied with its reply lost
        ans = {"type": "info", "reason": "%s: %s" % (type(e).__name__, e)}
    send(dict(ans, id=req["id"]))
os._exit(0)

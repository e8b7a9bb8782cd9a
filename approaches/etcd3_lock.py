#!/usr/bin/python3
# locklab adapter (docs/protocol.md, v1) for python-etcd3's Lock (Debian python3-etcd3 0.12.0, etcd 3.4): grant a
# lease, then a transaction "if the key /locks/<name> does not exist, put it with our uuid1 on that lease"
# (etcd3/locks.py, _acquire). Waiting watches the key and tries again (every waiter wakes: not fair). Nothing
# keeps the lease alive: a holder that does not call refresh() in time loses the key silently.
import concurrent.futures, json, math, os, sys, threading
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
# Lock.acquire is two calls: a lease grant, then the deciding put-if-absent transaction. Until the
# transaction is sent nothing a lock user sees has changed (a lease alone expires), so a failure or a
# timeout before it is `unavailable`, after it `info`. A call the answer gave up on sends no transaction.
gate, stage = threading.Lock(), {"sent": False, "given_up": False}
transaction = etcd.transaction


def deciding_transaction(*args, **kwargs):
    with gate:
        if stage["given_up"]:
            raise Etcd3Exception("the acquire was answered already")
        stage["sent"] = True
    return transaction(*args, **kwargs)


etcd.transaction = deciding_transaction


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


# No extend: Lock.refresh() is a keep-alive that renews the lease to its granted TTL only, not to the
# TTL asked for (locklab's extend), so the approach declares no renewal.
ops = {"acquire": acquire, "release": release,
       "extend": lambda req: {"type": "fail", "error": "unsupported", "reason": "refresh renews to the granted TTL only"}}
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "close":
        os._exit(0)  # without revoking: the lease runs out, as a crashed holder's would
    fn = ops.get(req.get("op"))
    stage.update(sent=req.get("op") != "acquire", given_up=False)  # release/extend: one deciding call
    try:
        ans = worker.submit(fn, req).result(req.get("timeout_ms", 5000) / 1000) if fn else \
            {"type": "fail", "error": "unsupported", "reason": "unknown op"}
    except (concurrent.futures.TimeoutError, Etcd3Exception, grpc.RpcError, AttributeError) as e:
        # AttributeError: python-etcd3 0.12.0's watch_once hands back the gRPC error it was given as if it were a
        # watch response (client.py line 723, kragniz/python-etcd3#1026) when the watch stream breaks mid-wait.
        with gate:  # unavailable or deadline exceeded: did the deciding call go out (its reply maybe lost)?
            stage["given_up"], sent = True, stage["sent"]
        why = "no answer from etcd in time" if isinstance(e, concurrent.futures.TimeoutError) else "%s: %s" % (type(e).__name__, e)
        ans = {"type": "info", "reason": why} if sent else {"type": "fail", "error": "unavailable", "reason": why}
    send(dict(ans, id=req["id"]))
os._exit(0)

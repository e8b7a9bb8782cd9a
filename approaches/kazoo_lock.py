#!/usr/bin/python3
# locklab adapter (docs/protocol.md, v1) for kazoo's Lock (Debian python3-kazoo 2.8.0): an ephemeral sequential
# node under the key, the lowest holds, each waiter watches its predecessor (kazoo/recipe/lock.py, _inner_acquire).
# On session loss the Lock does nothing (is_acquired stays True; release() swallows NoNodeError): only a
# connection listener tells the holder, which is what kazoo's module doc asks users to add (lock.py lines 9-14).
import concurrent.futures, json, os, sys, threading
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout

out = threading.Lock()

def send(msg):
    with out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()

hello = json.loads(sys.stdin.readline())
opts = hello.get("options") or {}
# answer: what a failed acquire is reported as. "adapter" (the default): not-acquired only when the connection
# never changed during the attempt, else info. "library": not-acquired whenever kazoo said no (False or
# LockTimeout), as an application hears it and goes on in the same process with the same session: the adapter's
# info would retire the client, whose process exit ends the session, and the server would delete a contender
# node the failed acquire's cleanup left behind (python-zk/kazoo#732, regressions/kazoo-732).
answer = opts.get("answer", "adapter")
if answer not in ("adapter", "library"):
    send({"type": "error", "reason": "option answer: %r: want adapter or library" % answer})
    os._exit(1)
leases, lost, changes = {}, {}, [0]  # acquire id -> Lock; lease -> state it was lost in; state changes seen


class Heartbeats:
    """Session heartbeats (docs/protocol.md, Events): every third of the session timeout, for each lease held and
    not told lost, `renewing`, an exists of its node, then `renewed` with no valid_ms. Any answer from the server
    (the node there or not) says the session was alive when the request went out, so locklab's belief in the
    holder's session follows it, as for the built-in ZooKeeper locks' heartbeats; a probe, not a check of the node:
    a node gone while the library still holds is the lock's failure to report, not the adapter's to hide."""

    def __init__(self, period):
        self.period, self.nodes, self.gone, self.now = period, {}, set(), False  # nodes: lease -> its node
        self.cv = threading.Condition()
        if period > 0:
            threading.Thread(target=self.run, name="session-heartbeats", daemon=True).start()

    def hold(self, lease, node):  # start beating for lease: once its grant's answer was sent
        with self.cv:
            if self.period > 0 and lease not in self.gone:
                self.nodes[lease], self.now = node, True
                self.cv.notify()

    def drop(self, lease):  # no renewing is sent for lease once this returns: a release's answer follows every one
        with self.cv:
            self.nodes.pop(lease, None)
            self.gone.discard(lease)

    def lost(self, lease):  # told lost (maybe before hold): its session is no longer vouched for
        with self.cv:
            self.nodes.pop(lease, None)
            self.gone.add(lease)

    def run(self):
        while True:
            with self.cv:
                self.cv.wait_for(lambda: self.now, self.period)
                self.now, due = False, list(self.nodes)
            for lease in due:
                self.beat(lease)

    def beat(self, lease):
        with self.cv:
            node = self.nodes.get(lease)
            if node is None:
                return
            send({"type": "renewing", "lease": lease})
        said = {"type": "renewed", "lease": lease}
        try:
            zk.exists_async(node).get(timeout=self.period)  # None when the node is gone: an answer all the same
        except Exception as e:  # no answer in time, connection loss, session expired
            said.update(error="unknown", reason="exists %s: %s: %s" % (node, type(e).__name__, e))
        send(said)


beats = Heartbeats(opts.get("heartbeat_ms", opts.get("session_timeout_ms", 2000) / 3) / 1000)

def listen(state):  # kazoo's event thread: must not block
    changes[0] += 1
    if state in (KazooState.SUSPENDED, KazooState.LOST):
        # SUSPENDED: the connection is gone and the session may expire any moment (kazoo's docs: assume the
        # lock lost); LOST: the session expired, so the server deleted our ephemeral node: certainly gone.
        for lease in list(leases):
            beats.lost(lease)
            if lease not in lost:
                send({"type": "lost", "lease": lease, "reason": "zookeeper connection " + state.lower()})
            if lost.get(lease) != KazooState.LOST:
                lost[lease] = state

zk = KazooClient(hosts=",".join(hello["servers"]["zookeeper"]), timeout=opts.get("session_timeout_ms", 2000) / 1000,
                 connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1},
                 command_retry={"max_tries": 3, "delay": 0.1, "max_delay": 0.5})
zk.add_listener(listen)
zk.start_async().wait(10)  # answer ready even if not yet connected: requests wait for the connection
send({"type": "ready", "protocol": 1})
root = opts.get("root", "/locklab/kazoo")
# kazoo calls may wait for a reconnection without bound: run them on one worker and answer info when the
# caller's time is up (the call goes on in the background, as in an application whose caller gave up).
worker = concurrent.futures.ThreadPoolExecutor(1)

def acquire(req):
    lock = zk.Lock(root + "/" + req["key"], identifier="client-%d" % hello["client"])
    before, budget = changes[0], max(req["timeout_ms"] - 300, 0)
    # lock_timeout_ms: a shorter timeout for kazoo's own wait. kazoo returns after it plus its cleanup, whose
    # delete may wait for a lost connection to be noticed (2/3 of the session timeout): room for kazoo's answer
    # to come before the request's deadline rather than the adapter's info.
    budget = min(budget, opts.get("lock_timeout_ms", budget)) / 1000
    try:
        # the timeout also bounds kazoo's own retries (retry.deadline) when wait is False
        got, said = lock.acquire(blocking=req["wait"], timeout=budget), "acquire returned False"
    except LockTimeout as e:
        got, said = False, "LockTimeout: %s" % e  # kazoo deleted the waiting node again (best-effort cleanup: see answer)
    if not got:
        if answer == "library":  # kazoo's word, whatever the connection did meanwhile (see answer above)
            return {"type": "fail", "error": "not-acquired", "reason": "kazoo: " + said}
        # False also comes after retries ran out on a lost connection, when the cleanup may have failed
        # and our node may still be queued: certain only if the connection never changed meanwhile.
        if changes[0] == before:
            return {"type": "fail", "error": "not-acquired", "reason": "another node is lower"}
        return {"type": "info", "reason": "connection changed during the attempt"}
    leases[req["id"]] = lock
    # The node's sequence number is a fencing token: the parent (made by ensure_path) is persistent, so
    # its counter only grows, and every grant goes to the lowest node present, created after any earlier
    # grant's node or queued behind it. (Curator's parents are containers the server deletes when empty,
    # which restarts the counter: see CuratorMutex.java.)
    return {"type": "ok", "token": int(lock.node[-10:])}

def release(req):
    lock = leases.pop(req["lease"], None)
    if lock is None:
        return {"type": "fail", "error": "not-held", "reason": "no such lease here"}
    beats.drop(req["lease"])
    state = lost.pop(req["lease"], None)
    lock.release()  # deletes the node; returns True even when the node is already gone
    if state == KazooState.LOST:  # the session that owned the node expired: it was gone before this
        return {"type": "fail", "error": "not-held", "reason": "session expired while held"}
    return {"type": "ok"}

ops = {"acquire": acquire, "release": release,
       "extend": lambda req: {"type": "fail", "error": "unsupported", "reason": "kazoo Lock has no lease to extend"}}
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "close":
        os._exit(0)  # no zk.stop(): closing the session would delete our nodes, a release; a crash does not
    fn = ops.get(req.get("op"))
    try:  # disconnected: kazoo would queue the node's create until it reconnects; nothing is sent (checked
        # here, not on the worker, which may still be in a call given up on)
        ans = {"type": "fail", "error": "unavailable", "reason": "not connected (%s)" % zk.state} \
            if req.get("op") == "acquire" and not zk.connected else \
            worker.submit(fn, req).result(req.get("timeout_ms", 5000) / 1000) if fn else \
            {"type": "fail", "error": "unsupported", "reason": "unknown op"}
    except concurrent.futures.TimeoutError:
        ans = {"type": "info", "reason": "no answer from zookeeper in time"}
    except ValueError as e:  # kazoo's path validation
        ans = {"type": "fail", "error": "invalid-key", "reason": str(e)}
    except KazooException as e:  # connection loss, session expired, operation timeout: may have happened
        ans = {"type": "info", "reason": "%s: %s" % (type(e).__name__, e)}
    send(dict(ans, id=req["id"]))
    if req.get("op") == "acquire" and ans["type"] == "ok" and req["id"] in leases:
        lock = leases[req["id"]]
        beats.hold(req["id"], lock.path + "/" + lock.node)
os._exit(0)

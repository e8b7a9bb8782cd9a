#!/usr/bin/python3
"""Drive a locklab adapter (docs/protocol.md, v1) by hand: standard library only.

    drive.py APPROACH.yaml --cluster CLUSTER.json [--pause] [--rounds N]

CLUSTER.json is what `locklab cluster up --servers ... --json` prints. drive.py starts two clients of the
approach (its `command`, from the file's directory), sends each `hello` with the servers of the approach's
kind, runs a scripted sequence (try and wait acquires, a second client contending, a blocked waiter handed
the lock on release, extend, a release of a lease no longer held, close), then both clients contending on
one key for --rounds rounds, and checks every line against the protocol (one answer per id, the types and
errors the protocol names, tokens non-negative integers growing per key where the approach declares
fencing) and mutual exclusion (as seen from here: from an ok's arrival to its release's sending, which lies
inside the real holding). --pause stops the holder (SIGSTOP) past its session timeout and expects the
other client to get the lock and the stopped one to send `lost` after SIGCONT. It exits 1 on any problem.
"""
import json, os, queue, re, signal, subprocess, sys, threading, time

ERRORS = {"not-acquired", "not-held", "unavailable", "unsupported", "invalid-key"}
problems = []


def problem(msg):
    problems.append(msg)
    print("PROBLEM: " + msg, flush=True)


def scalar(v):
    v = v.strip()
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    if v in ("true", "false"):
        return v == "true"
    return v.strip("'\"")


def flow(v):  # the flow-style YAML approach files use: [a, b] and {k: v, k2: [x]}; no nesting of maps
    v = v.strip()
    if v.startswith("[") and v.endswith("]"):
        return [scalar(x) for x in v[1:-1].split(",") if x.strip()]
    if v.startswith("{") and v.endswith("}"):
        return {k.strip(): scalar(x) for k, x in (kv.split(":", 1) for kv in v[1:-1].split(",") if kv.strip())}
    return scalar(v)


def load_approach(path):
    a = {}
    for line in open(path):
        if line[:1].isalpha() and ":" in line:
            k, v = line.split(":", 1)
            a[k.strip()] = flow(re.sub(r"\s+#.*$", "", v))
    return a


class Client:
    def __init__(self, approach, base, servers, n):
        self.n, self.next_id, self.answered, self.lost, self.granted = n, 1, set(), [], set()
        self.q = queue.Queue()
        self.p = subprocess.Popen(approach["command"], cwd=base, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open("/tmp/drive-%s-%d.log" % (approach["name"], n), "w"), text=True)
        threading.Thread(target=self.read, daemon=True).start()
        t = time.monotonic()
        self.write({"type": "hello", "protocol": 1, "approach": approach["name"], "client": n,
                    "servers": servers, "dsn": {}, "options": approach.get("options") or {}})
        m = self.q.get(timeout=60)
        self.start_s = time.monotonic() - t
        if m != {"type": "ready", "protocol": 1}:
            problem("client %d: handshake answered %r" % (n, m))

    def read(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                problem("client %d: not JSON: %r" % (self.n, line))
                continue
            if not isinstance(m, dict):
                    problem("client %d: not an object: %r" % (self.n, line))
            elif m.get("type") == "lost":
                print("  client %d: lost %r" % (self.n, m), flush=True)
                if m.get("lease") not in self.granted:
                    problem("client %d: lost for a lease not held: %r" % (self.n, m))
                self.lost.append(m)
            else:
                self.q.put(m)
        self.q.put(None)

    def write(self, m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()

    def send(self, op, **f):
        rid, self.next_id = self.next_id, self.next_id + 1
        f = dict(f, op=op, id=rid)
        f.setdefault("timeout_ms", 5000)
        self.write(f)
        return rid, f, time.monotonic()

    def wait(self, sent):
        rid, f, _ = sent
        m = self.q.get(timeout=f["timeout_ms"] / 1000 + 5)
        if m is None or m.get("id") != rid or rid in self.answered:
            problem("client %d: answer to %d is %r" % (self.n, rid, m))
            return m or {}
        self.answered.add(rid)
        t = m.get("type")
        if t not in ("ok", "fail", "info"):
            problem("client %d: answer type %r" % (self.n, t))
        if t == "fail" and m.get("error") not in ERRORS:
            problem("client %d: fail error %r" % (self.n, m.get("error")))
        tok = m.get("token")
        if t == "ok" and tok is not None and (type(tok) is not int or tok < 0):
            problem("client %d: token %r" % (self.n, tok))
        if t == "ok" and f.get("op") == "acquire":
            self.granted.add(rid)
        if f.get("op") == "release":
            self.granted.discard(f["lease"])
        return m

    def call(self, op, **f):
        return self.wait(self.send(op, **f))


def expect(what, m, *types):
    got = str(m.get("type")) + ("/" + m["error"] if m.get("type") == "fail" else "")
    print("  %-44s %s" % (what, json.dumps(m)), flush=True)
    if got not in types and m.get("type") not in types:
        problem("%s: wanted %s, got %s" % (what, " or ".join(types), got))
    return m


def main():
    args = sys.argv[1:]
    path = args[0]
    approach = load_approach(path)
    caps = set(approach.get("capabilities") or [])
    nodes = json.load(open(args[args.index("--cluster") + 1]))["nodes"]
    addrs = [n["addr"] for n in nodes if n["server"] == approach["server"]]
    servers = {approach["server"]: addrs[:approach.get("nodes") or len(addrs)]}
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 50
    base = os.path.dirname(os.path.abspath(path))
    key = "drive-%d" % os.getpid()
    a, b = Client(approach, base, servers, 0), Client(approach, base, servers, 1)
    print("started: ready after %.2f s and %.2f s" % (a.start_s, b.start_s))
    tokens = []

    def granted(m):
        if "fencing" in caps:
            if m.get("token") is None:
                problem("fencing declared, no token")
            elif tokens and m["token"] <= tokens[-1]:
                problem("token %d after %d" % (m["token"], tokens[-1]))
            tokens.append(m.get("token"))

    ttl = 3000
    s = a.send("acquire", key=key, ttl_ms=ttl, wait=False)
    granted(expect("A try-acquire", a.wait(s), "ok"))
    la = s[0]
    expect("B try-acquire (A holds)", b.call("acquire", key=key, ttl_ms=ttl, wait=False), "fail/not-acquired")
    expect("B wait-acquire 1 s (A holds)", b.call("acquire", key=key, ttl_ms=ttl, wait=True, timeout_ms=1000),
           "fail/not-acquired")
    if "reentrant" in caps:
        s = a.send("acquire", key=key, ttl_ms=ttl, wait=False)
        expect("A try-acquire again (reentrant)", a.wait(s), "ok")
        expect("A release the inner hold", a.call("release", lease=s[0]), "ok")
    expect("A extend", a.call("extend", lease=la, ttl_ms=ttl),
           "ok" if "renewal" in caps else "fail/unsupported")
    sb = b.send("acquire", key=key, ttl_ms=ttl, wait=True, timeout_ms=5000)
    time.sleep(0.3)
    expect("A release (B waits)", a.call("release", lease=la), "ok")
    granted(expect("B wait-acquire, handed the lock", b.wait(sb), "ok"))
    expect("A release again", a.call("release", lease=la), "fail/not-held")
    expect("A extend a released lease", a.call("extend", lease=la, ttl_ms=ttl), "fail/not-held", "fail/unsupported")
    expect("B release", b.call("release", lease=sb[0]), "ok")
    if "ttl" in caps and "--pause" not in args:
        s = a.send("acquire", key=key, ttl_ms=1000, wait=False)
        m = expect("A try-acquire, ttl 1 s", a.wait(s), "ok")
        time.sleep(m.get("valid_ms", 1000) / 1000 + 1.5)
        granted(expect("B wait-acquire after A's TTL", b.call("acquire", key=key, ttl_ms=ttl, wait=True), "ok"))
        expect("A extend an expired lease", a.call("extend", lease=s[0], ttl_ms=ttl), "fail/not-held",
               "fail/unsupported")
        expect("A release an expired lease", a.call("release", lease=s[0]), "fail/not-held")
        b.call("release", lease=b.next_id - 1)
    if "--pause" in args:
        pause = (approach.get("options") or {}).get("session_timeout_ms", 2000) / 1000 * 2 + 1
        s = a.send("acquire", key=key, ttl_ms=ttl, wait=False)
        granted(expect("A try-acquire", a.wait(s), "ok"))
        a.p.send_signal(signal.SIGSTOP)
        print("  A stopped for %.1f s" % pause, flush=True)
        t = time.monotonic()
        m = b.call("acquire", key=key, ttl_ms=ttl, wait=True, timeout_ms=int(pause * 1000))
        granted(expect("B wait-acquire while A is stopped (%.2f s)" % (time.monotonic() - t), m, "ok"))
        time.sleep(max(0, pause - (time.monotonic() - t)))
        a.p.send_signal(signal.SIGCONT)
        t = time.monotonic()
        while not a.lost and time.monotonic() - t < 10:
            time.sleep(0.05)
        print("  A's lost event %s after SIGCONT" % ("came %.2f s" % (time.monotonic() - t) if a.lost else "never came"))
        if not a.lost and "loss-signal" in caps:
            problem("no lost event")
        expect("A release the lost lease", a.call("release", lease=s[0]), "fail/not-held", "ok")
        b.call("release", lease=b.next_id - 1)
    # Both contend on one key: holding as seen from here must never overlap.
    held, lock, times = [], threading.Lock(), []

    def contend(c):
        for _ in range(rounds):
            t0 = time.monotonic()
            m = c.call("acquire", key=key + "-x", ttl_ms=10000, wait=True, timeout_ms=10000)
            if m.get("type") != "ok":
                problem("contention: client %d acquire %r" % (c.n, m))
                continue
            got = time.monotonic()
            s = c.send("release", lease=c.next_id - 1)
            if c.wait(s).get("type") != "ok":
                problem("contention: client %d release failed" % c.n)
            with lock:
                held.append((got, s[2], c.n, m.get("token")))
                times.append(time.monotonic() - t0)
    ts = [threading.Thread(target=contend, args=(c,)) for c in (a, b)]
    t0 = time.monotonic()
    [t.start() for t in ts]
    [t.join() for t in ts]
    wall = time.monotonic() - t0
    held.sort()
    for x, y in zip(held, held[1:]):
        if y[0] < x[1]:
            problem("double grant: client %d held %.4f-%.4f, client %d from %.4f" % (x[2], x[0], x[1], y[2], y[0]))
        if "fencing" in caps and x[3] is not None and y[3] is not None and y[3] <= x[3]:
            problem("token %r after %r" % (y[3], x[3]))
    times.sort()
    print("contention: %d grants in %.2f s, acquire+release p50 %.1f ms p90 %.1f ms, no overlap seen: %s" % (
        len(held), wall, 1000 * times[len(times) // 2], 1000 * times[len(times) * 9 // 10],
        not any("double grant" in p for p in problems)))
    a.call("acquire", key=key + "-solo", ttl_ms=10000, wait=False)  # warm up
    a.call("release", lease=a.next_id - 1)
    t0 = time.monotonic()
    for _ in range(rounds):
        m = a.call("acquire", key=key + "-solo", ttl_ms=10000, wait=False)
        a.call("release", lease=a.next_id - 1)
    print("one client alone: acquire+release %.1f ms" % (1000 * (time.monotonic() - t0) / rounds))
    for c in (a, b):
        c.write({"op": "close", "id": c.next_id})
        try:
            c.p.wait(10)
        except subprocess.TimeoutExpired:
            problem("client %d did not exit on close" % c.n)
            c.p.kill()
    print("problems: %d" % len(problems))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# An adapter that breaks the lock client protocol (docs/protocol.md) in
# one way, named by its argument: the tests check locklab names each
# mistake in one line. Standard library only. Before ready it writes its
# pid to the file named by $BAD_ADAPTER_PIDFILE, if set, so a test can
# check nothing is left running.
import json
import os
import sys
import time

mode = sys.argv[1]
sys.stderr.write("bad adapter starting in mode %s\n" % mode)
sys.stderr.flush()
pidfile = os.environ.get("BAD_ADAPTER_PIDFILE")
if pidfile:
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))


def send(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def msg(**m):
    send(json.dumps(m))


if mode == "exit-at-start":
    sys.stderr.write("ImportError: cannot import kazoo\n")
    sys.exit(1)
hello = json.loads(sys.stdin.readline())
if mode == "hang-in-handshake":
    time.sleep(3600)
if mode == "error":
    msg(type="error", reason="cannot reach the servers")
    sys.exit(1)
if mode == "protocol-2":
    msg(type="ready", protocol=2)
    time.sleep(3600)
msg(type="ready", protocol=1)
if mode == "ready-twice":
    msg(type="ready", protocol=1)
    time.sleep(3600)

for line in sys.stdin:
    req = json.loads(line)
    rid = req["id"]
    if req["op"] == "close":
        break
    if mode == "not-json":
        send("Traceback? no: just words")
    elif mode == "not-object":
        send("[1, 2, 3]")
    elif mode == "unknown-type":
        msg(type="granted", id=rid)
    elif mode == "unknown-id":
        msg(type="ok", id=rid + 100)
    elif mode == "answer-twice":
        msg(type="ok", id=rid)
        msg(type="ok", id=rid)
    elif mode == "never-answer":
        sys.stderr.write("not answering request %d\n" % rid)
        sys.stderr.flush()
    elif mode == "bad-token":
        msg(type="ok", id=rid, token=-3)
    elif mode == "bad-error-code":
        msg(type="fail", id=rid, error="busy", reason="someone has it")
    elif mode == "exit-mid-request":
        sys.stderr.write("segfault, say\n")
        sys.exit(3)
    elif mode == "info-at-timeout":  # not a mistake: an acquire left unknown once its wait ran out
        time.sleep(req.get("timeout_ms", 0) / 1000)
        msg(type="info", id=rid, reason="no answer from the server in time")
    elif mode == "info-at-once":  # not a mistake: the connection dropped under the request
        msg(type="info", id=rid, reason="connection lost")
    elif mode == "unavailable-at-timeout":  # not a mistake: nothing deciding sent before the wait ran out
        time.sleep(req.get("timeout_ms", 0) / 1000)
        msg(type="fail", id=rid, error="unavailable", reason="no answer from the server in time")
    elif mode == "unavailable-at-once":  # not a mistake: the connection was refused
        msg(type="fail", id=rid, error="unavailable", reason="connection refused")
    elif mode == "renewed-unasked":
        msg(type="ok", id=rid)
        msg(type="renewed", lease=rid, valid_ms=1000)
    elif mode == "renewing-twice":
        msg(type="ok", id=rid)
        msg(type="renewing", lease=rid)
        msg(type="renewing", lease=rid)
    elif mode == "session-heartbeat":  # not a mistake: a session lock's heartbeat, 300 ms after its grant
        msg(type="ok", id=rid)
        time.sleep(0.3)
        msg(type="renewing", lease=rid)
        time.sleep(0.1)
        msg(type="renewed", lease=rid)
    elif mode == "slow-grant":  # not a mistake: a grant whose answer takes 400 ms on its way back
        time.sleep(0.4)
        msg(type="ok", id=rid)
    elif mode == "long-line":
        send('{"type":"info","id":%d,"reason":"%s"}' % (rid, "x" * (2 << 20)))
    else:
        msg(type="ok", id=rid)

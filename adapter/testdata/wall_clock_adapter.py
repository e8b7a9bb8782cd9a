#!/usr/bin/python3
# An adapter that tells its own wall clock: every acquire is refused with
# time.time() as the reason, so a test can see which clock the process
# reads. Standard library only.
import json
import sys
import time

json.loads(sys.stdin.readline())  # hello
print(json.dumps({"type": "ready", "protocol": 1}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "close":
        break
    print(json.dumps({"type": "fail", "id": req["id"], "error": "not-acquired", "reason": repr(time.time())}), flush=True)

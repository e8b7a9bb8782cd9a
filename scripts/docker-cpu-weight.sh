#!/usr/bin/env bash
# Gives the Docker engine's containers, as a group, the CPU weight of the
# processes they stand in for, on a cgroup v1 host whose engine uses the
# cgroupfs driver.
#
# There every container sits in one cgroup, /docker, whose cpu.shares
# (1024) weighs as much as a single process of the root cgroup: the
# servers of a --cluster docker run (three ZooKeeper JVMs, MariaDB, etcd,
# five Redis, ...) all together get what one busy process beside them gets,
# where the same servers started by locklab itself each get a share of
# their own. Beside two busy loops and three test packages the containers
# answered seconds late (loads of 50 to 80; etcd's keep-alives, ZooKeeper's
# pings and Redis replies missed their deadlines in the Docker tests).
# Eight processes' weight keeps them answering without starving the rest.
#
# Prints what it did; changes nothing on a cgroup v2 host (each container
# is a cgroup of its own beside the others there), without Docker, or where
# the file cannot be written (not root).
set -uo pipefail
f=/sys/fs/cgroup/cpu/docker/cpu.shares
want=${LOCKLAB_DOCKER_CPU_SHARES:-8192}
# Docker makes /docker at its first container since boot: start one (of an
# image scripts/images.sh built) so that the weight is set before the tests'.
if [ ! -e "$f" ] && [ -d /sys/fs/cgroup/cpu ] && command -v docker >/dev/null 2>&1; then
  img=$(docker images -q locklab/redis 2>/dev/null | head -1)
  [ -n "$img" ] && docker run --rm "$img" true >/dev/null 2>&1
fi
if [ ! -w "$f" ]; then
  echo "docker-cpu-weight: $f not writable (no cgroup v1 Docker group, or not root): left as it is"
  exit 0
fi
have=$(cat "$f")
if [ "$have" -ge "$want" ]; then
  echo "docker-cpu-weight: Docker's containers already weigh $have (>= $want)"
  exit 0
fi
if echo "$want" > "$f"; then
  echo "docker-cpu-weight: Docker's containers now weigh $want (were $have): eight processes, not one"
else
  echo "docker-cpu-weight: could not set $f: left at $have"
fi

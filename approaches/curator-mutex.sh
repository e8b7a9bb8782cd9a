#!/bin/sh
# Runs CuratorMutex.java: compiled on first use into a cache keyed by the sources' hash (one compile at a time,
# into a temporary directory renamed into place), then the JVM replaces this shell. Needs Debian's
# libcurator-recipes-java, libcurator-framework-java and a JDK (scripts/deps.sh installs them).
# With an argument, SOURCE.java, it runs that class instead, compiled beside CuratorMutex.java, whose protocol
# helpers it may call: another Curator recipe's adapter (regressions/curator-696) without a second build script.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
J=/usr/share/java
CP=$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar
main=CuratorMutex
set -- "$here/CuratorMutex.java" "$@"
if [ $# -gt 1 ]; then
  main=$(basename "$2" .java)
  set -- "$1" "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
fi
hash=$(cat "$@" "$here/curator-mutex.sh" | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/locklab
dir=$cache/curator-$main-$hash
if [ ! -f "$dir/$main.class" ]; then
  mkdir -p "$cache"
  exec 9>"$dir.lock"
  flock 9  # the other clients started at once wait for this compile
  if [ ! -f "$dir/$main.class" ]; then
    tmp=$(mktemp -d "$dir.tmp.XXXXXX")
    javac -nowarn -cp "$CP" -d "$tmp" "$@" >&2 || { rm -rf "$tmp"; exit 1; }
    mv -T "$tmp" "$dir"
  fi
  exec 9>&-
fi
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx128m -cp "$dir:$CP" "$main"

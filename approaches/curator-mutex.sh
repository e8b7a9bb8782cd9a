#!/bin/sh
# Runs CuratorMutex.java: compiled on first use into a cache keyed by the source's hash (one compile at a time,
# into a temporary directory renamed into place), then the JVM replaces this shell. Needs Debian's
# libcurator-recipes-java, libcurator-framework-java and a JDK (scripts/deps.sh installs them).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
J=/usr/share/java
CP=$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar
hash=$(cat "$here/CuratorMutex.java" "$here/curator-mutex.sh" | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/locklab
dir=$cache/curator-mutex-$hash
if [ ! -f "$dir/CuratorMutex.class" ]; then
  mkdir -p "$cache"
  exec 9>"$dir.lock"
  flock 9  # the other clients started at once wait for this compile
  if [ ! -f "$dir/CuratorMutex.class" ]; then
    tmp=$(mktemp -d "$dir.tmp.XXXXXX")
    javac -nowarn -cp "$CP" -d "$tmp" "$here/CuratorMutex.java" >&2 || { rm -rf "$tmp"; exit 1; }
    mv -T "$tmp" "$dir"
  fi
  exec 9>&-
fi
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx128m -cp "$dir:$CP" CuratorMutex

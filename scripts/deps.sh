#!/usr/bin/env bash
# Installs what locklab needs on Debian 12: the servers it starts (Redis,
# MariaDB, ZooKeeper), make, what builds the images of --cluster docker
# (debootstrap) and proves compose.yaml (docker-compose), socat (the tests
# reach the Docker engine over TCP through it, as an engine elsewhere is
# reached: docs/remote.md), the lock libraries
# the adapters under approaches/ wrap (redis-py, kazoo, python-etcd3 for
# /usr/bin/python3; Curator and a JDK to compile its adapter), and a Go
# toolchain as new as go.mod asks for.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PACKAGES=(make git ca-certificates curl unzip
  redis-server redis-tools mariadb-server zookeeper default-jre-headless
  postgresql etcd-server faketime libtcmalloc-minimal4 redis-sentinel
  debootstrap docker-compose socat
  python3-redis python3-kazoo python3-etcd3
  libcurator-recipes-java libcurator-framework-java default-jdk-headless)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Debian starts these services on install; locklab runs its own instances.
for svc in redis-server mariadb zookeeper postgresql etcd; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $SUDO systemctl stop "$svc" || true
  fi
done

# Go: the version go.mod names, or newer.
want="$(awk '/^go /{print $2}' go.mod)"
have_ok() {
  local go="$1"
  [ -x "$go" ] || return 1
  local v
  v="$("$go" env GOVERSION 2>/dev/null | sed 's/^go//')" || return 1
  [ "$(printf '%s\n%s\n' "$want" "$v" | sort -V | head -1)" = "$want" ]
}
for go in "$(command -v go || true)" /usr/local/go/bin/go /usr/local/lib/locklab-go/bin/go; do
  if [ -n "$go" ] && have_ok "$go"; then
    echo "deps: using $go ($("$go" env GOVERSION))"
    [ "$go" = "$(command -v go || true)" ] || $SUDO ln -sf "$go" /usr/local/bin/go
    exit 0
  fi
done
# No suitable Go: Debian's Go is older, but it can fetch the toolchain
# module of the version we want from the Go module proxy.
echo "deps: installing Go $want"
if ! command -v go >/dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends golang-go
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
dir="$(cd "$tmp" && GOPATH="$tmp/gopath" GOFLAGS=-modcacherw GOTOOLCHAIN=local \
  go mod download -json "golang.org/toolchain@v0.0.1-go${want}.linux-amd64" | awk -F'"' '/"Dir"/{print $4}')"
$SUDO rm -rf /usr/local/lib/locklab-go
$SUDO cp -r "$dir" /usr/local/lib/locklab-go
# Module zips carry no file modes: make the tools executable, as the go
# command does when it switches toolchains itself.
$SUDO chmod -R a+rX /usr/local/lib/locklab-go
$SUDO chmod a+x /usr/local/lib/locklab-go/bin/* /usr/local/lib/locklab-go/pkg/tool/*/*
$SUDO ln -sf /usr/local/lib/locklab-go/bin/go /usr/local/bin/go
echo "deps: using /usr/local/lib/locklab-go/bin/go ($(/usr/local/lib/locklab-go/bin/go env GOVERSION))"

#!/usr/bin/env bash
# Builds the server images of `locklab --cluster docker` from Debian's
# packages, for machines whose Docker engine reaches no image registry:
# a minimal Debian root file system (debootstrap --variant=minbase), the
# server's packages installed in a chroot, imported with `docker import`.
#
#   scripts/images.sh            build what is missing or out of date
#   scripts/images.sh --list     print the images and their packages
#   scripts/images.sh --env      print the variables that point compose.yaml at them
#   scripts/images.sh --suite trixie redis
#                                one server from another Debian release
#                                (locklab/redis:trixie: another Redis version)
#
# Each image is tagged locklab/<server>:bookworm (what `--image local`
# names) and labelled with the exact package versions it holds; an image
# whose label matches the versions apt would install now is reused, so a
# second run costs a few seconds. Needs root (debootstrap, chroot) and a
# Docker engine.
set -euo pipefail

# The Debian release the images come from. bookworm is the host's (the
# embedded servers' versions); another (--suite trixie redis) builds an
# image of another server version to compare with, tagged with its name.
SUITE=bookworm
HOST_SUITE=bookworm
MIRROR="${LOCKLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if [ "${1:-}" = "--suite" ]; then
  SUITE="${2:?--suite needs a Debian release name}"
  shift 2
fi

# server -> packages. The servers run as locklab starts them natively
# (cluster/docker.go gives the commands), so the images hold only the
# packages and what their start-up scripts use, and libfaketime where a
# server-clock fault can move a server's wall clock (Redis with tcmalloc,
# as docs/facts.md says).
declare -A PACKAGES=(
  [redis]="redis-server libfaketime libtcmalloc-minimal4"
  [mariadb]="mariadb-server libfaketime"
  [zookeeper]="zookeeper default-jre-headless libfaketime"
  [etcd]="etcd-server"
  [postgres]="postgresql-15"
)
SERVERS=(redis mariadb zookeeper etcd postgres)

die() { echo "images: $*" >&2; exit 1; }

# versions SERVER: "pkg=version ..." as apt would install them now (for
# another suite than the host's, apt here cannot say: the packages' names).
versions() {
  local out="" p v
  if [ "$SUITE" != "$HOST_SUITE" ]; then echo "${PACKAGES[$1]} from $SUITE"; return; fi
  for p in ${PACKAGES[$1]}; do
    v="$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/{print $2}')"
    [ -n "$v" ] && [ "$v" != "(none)" ] || die "apt knows no package $p (run apt-get update)"
    out+="$p=$v "
  done
  echo "${out% }"
}

image_of() { echo "locklab/$1:$SUITE"; }

# --env: the variables compose.yaml takes its images from, for the local ones.
if [ "${1:-}" = "--env" ]; then
  for s in "${SERVERS[@]}"; do echo "export LOCKLAB_${s^^}_IMAGE=$(image_of "$s")"; done
  exit 0
fi
if [ "${1:-}" = "--list" ]; then
  for s in "${SERVERS[@]}"; do echo "$(image_of "$s")  $(versions "$s")"; done
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "needs root (debootstrap and chroot), and there is no sudo"
  exec sudo -E "$0" "$@"
fi
command -v docker >/dev/null || die "no docker command: install Docker"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed)"

if [ "$#" -gt 0 ]; then
  for s in "$@"; do [ -n "${PACKAGES[$s]:-}" ] || die "unknown server $s (known: ${SERVERS[*]})"; done
  SERVERS=("$@")
fi
todo=()
for s in "${SERVERS[@]}"; do
  want="$(versions "$s")"
  have="$(docker image inspect -f '{{index .Config.Labels "locklab.packages"}}' "$(image_of "$s")" 2>/dev/null || true)"
  if [ "$have" = "$want" ]; then
    echo "images: $(image_of "$s") is up to date ($want)"
  else
    todo+=("$s")
  fi
done
[ "${#todo[@]}" -gt 0 ] || exit 0

if ! command -v debootstrap >/dev/null; then
  apt-get install -y -q --no-install-recommends debootstrap >/dev/null || {
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends debootstrap >/dev/null; }
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/locklab-images.XXXXXX")"
cleanup() {
  # A chroot's /proc must be unmounted before its tree can go.
  for m in "$work"/*/proc; do mountpoint -q "$m" 2>/dev/null && umount -l "$m"; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "images: debootstrap $SUITE from $MIRROR"
start=$(date +%s)
debootstrap --variant=minbase "$SUITE" "$work/base" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -5 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
# The image gets the package sources the host has (bookworm-updates and
# the security archive too), so it installs the versions apt-cache named.
if [ "$SUITE" = "$HOST_SUITE" ]; then
  cp /etc/apt/sources.list.d/*.sources "$work/base/etc/apt/sources.list.d/" 2>/dev/null || true
  if [ -f /etc/apt/sources.list ]; then cp /etc/apt/sources.list "$work/base/etc/apt/sources.list"; fi
fi
# Packages must not start their services inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$work/base/usr/sbin/policy-rc.d"
chmod +x "$work/base/usr/sbin/policy-rc.d"
echo "images: base ready in $(($(date +%s) - start)) s"

for s in "${todo[@]}"; do
  t0=$(date +%s)
  root="$work/$s"
  cp -a "$work/base" "$root"
  mount -t proc proc "$root/proc"
  want="$(versions "$s")"
  pkgs="$want"
  [ "$SUITE" = "$HOST_SUITE" ] || pkgs="${PACKAGES[$s]}"
  # shellcheck disable=SC2086 # the package list splits on purpose
  chroot "$root" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $pkgs" \
    >"$work/$s.log" 2>&1 || { umount -l "$root/proc"; tail -5 "$work/$s.log" >&2; die "installing $want failed (log above)"; }
  umount -l "$root/proc"
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root/usr/sbin/policy-rc.d"
  old="$(docker image inspect -f '{{.Id}}' "$(image_of "$s")" 2>/dev/null || true)"
  tar -C "$root" -c . | docker import \
    -c "LABEL locklab.packages=\"$want\"" -c "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    - "$(image_of "$s")" >/dev/null
  rm -rf "$root"
  # The image this one replaces would linger untagged (half a gigabyte for
  # ZooKeeper's): remove it unless a container still uses it.
  [ -z "$old" ] || docker rmi "$old" >/dev/null 2>&1 || true
  echo "images: $(image_of "$s") built in $(($(date +%s) - t0)) s ($want)"
done

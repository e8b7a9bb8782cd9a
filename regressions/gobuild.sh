#!/bin/sh
# Runs the Go adapter in folder $1: a module of its own, pinned to one version of its library by its go.mod and
# go.sum (both committed), built on first use into a cache keyed by the hash of its go.mod, go.sum and sources, those
# of goadapter/ and the Go version (one build at a time on the machine, into a temporary name renamed into place: go
# build uses every core, and two builds of one library version side by side compile it twice, where the second after
# the first finds it in Go's build cache); then the adapter replaces this shell. `gobuild.sh DIR --build-only`
# builds and exits. A failed build is one line on stderr.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$1" 2>/dev/null && pwd) || { echo "gobuild: no adapter folder $1" >&2; exit 1; }
command -v go >/dev/null || { echo "gobuild: go is not on PATH: it builds $src" >&2; exit 1; }
hash=$( (cd "$src" && cat go.mod go.sum ./*.go && cd "$here/goadapter" && cat go.mod ./*.go && go version) | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/locklab
bin=$cache/go-$(basename "$(dirname "$src")")-$(basename "$src")-$hash
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  exec 9>"$cache/go-build.lock"
  flock 9  # the other clients started at once, and other adapters' builds, wait for this build
  if [ ! -x "$bin" ]; then
    log=$(mktemp)
    # -mod=readonly: the committed go.sum decides; GOWORK=off: no workspace above changes the versions. No
    # -trimpath: with it every package, the standard library's too, is compiled anew, not taken from the build
    # cache locklab's own build and tests filled.
    if ! (cd "$src" && GOWORK=off go build -mod=readonly -o "$bin.tmp" .) >"$log" 2>&1; then
      echo "gobuild: building $src failed: $(grep -v '^#' "$log" | head -n 1)" >&2
      rm -f "$log" "$bin.tmp"
      exit 1
    fi
    rm -f "$log"
    mv "$bin.tmp" "$bin"
  fi
  exec 9>&-
fi
[ "${2:-}" = --build-only ] && exit 0
exec "$bin"

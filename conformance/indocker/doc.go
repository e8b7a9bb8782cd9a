// Package indocker runs the conformance suite of every approach against a
// cluster of containers (--cluster docker) from the images
// scripts/images.sh builds: the same suite as each approach's package runs
// against the embedded servers, on the other kind of cluster. It has tests
// only.
package indocker

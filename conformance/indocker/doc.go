// Package indocker runs the conformance suite against a cluster of
// containers (--cluster docker) from the images scripts/images.sh builds:
// the same suite as each approach's package runs against the embedded
// servers, on the other kind of cluster. By default it runs, for each
// topology (a server kind, one node or all), the fewest approaches that
// declare every capability of that topology;
// LOCKLAB_INDOCKER_APPROACHES=all (or a comma-separated list) runs others.
// It has tests only.
package indocker

// Package faketime starts processes under libfaketime reading their wall
// clock's offset from a file of their own, and moves it. The servers'
// clock faults and the adapters' clocks (a client-clock fault on a lock
// client that is a process of its own) use it.
package faketime

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	// Lib is Debian's libfaketime (package faketime).
	Lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
	// TCMalloc goes before Lib for a program linked with jemalloc (Redis),
	// which clashes with libfaketime alone (package libtcmalloc-minimal4).
	TCMalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
	// FileVar names the offset file in a process's environment.
	FileVar = "FAKETIME_TIMESTAMP_FILE"
)

// Preloads are the libraries a process under libfaketime preloads, in
// order.
func Preloads(withTCMalloc bool) []string {
	if withTCMalloc {
		return []string{TCMalloc, Lib}
	}
	return []string{Lib}
}

// Installed says why a process cannot be put under libfaketime, or nil.
func Installed(withTCMalloc bool) error {
	for _, lib := range Preloads(withTCMalloc) {
		if _, err := os.Stat(lib); err != nil {
			return fmt.Errorf("clock faults need %s: install the Debian packages faketime and libtcmalloc-minimal4", lib)
		}
	}
	return nil
}

// Vars is the environment that puts a process under libfaketime reading
// its offset from file (a path as the process sees it). perCall re-reads
// the file at every clock call, so a jump lands at once; otherwise once a
// second, which a JVM needs (it reads the wall clock so often that
// re-reading the file at every call starved a ZooKeeper ensemble).
func Vars(file string, withTCMalloc, perCall bool) []string {
	cache := "FAKETIME_CACHE_DURATION=1"
	if perCall {
		cache = "FAKETIME_NO_CACHE=1"
	}
	return []string{
		"LD_PRELOAD=" + strings.Join(Preloads(withTCMalloc), " "),
		FileVar + "=" + file,
		cache,
		// The monotonic clock is left alone, as an NTP step leaves it.
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
		// The "monotonic fix" shifts the deadlines of condition waits on
		// the monotonic clock by the fake offset; with that clock not
		// faked it only makes them wrong, and the JVM's timed waits
		// spin: a ZooKeeper ensemble used 2 cores while idle, 0.03
		// without it (measured side by side here).
		"FAKETIME_FORCE_MONOTONIC_FIX=0",
	}
}

// Write replaces the offset file at once (rename), so libfaketime never
// reads a half-written offset.
func Write(file string, d time.Duration) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(Offset(d)+"\n"), 0o644); err != nil {
		return fmt.Errorf("clock offset: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("clock offset: %w", err)
	}
	return nil
}

// Offset is an offset as libfaketime reads it: "+1.5" is 1.5 s ahead,
// "-2" behind, in seconds with at least three decimals and as many more
// as the offset has (to the nanosecond), so that Parse reads back exactly
// what was written: a jump and its heal, each a read-modify-write of the
// file, then leave no remainder (a rounded offset left one behind).
func Offset(d time.Duration) string {
	sign := "+"
	u := uint64(d)
	if d < 0 {
		sign, u = "-", uint64(-d)
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", u%uint64(time.Second)), "0")
	if len(frac) < 3 {
		frac += strings.Repeat("0", 3-len(frac))
	}
	return fmt.Sprintf("%s%d.%s", sign, u/uint64(time.Second), frac)
}

// Parse reads an offset as Offset writes it (and as libfaketime reads a
// plain number of seconds: "+1.5", "-2", "3"), exactly to the nanosecond.
func Parse(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(strings.TrimPrefix(t, "-"), "+")
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" && frac == "" || len(frac) > 9 || strings.ContainsAny(whole+frac, "+-") {
		return 0, fmt.Errorf("clock offset %q: want seconds such as +1.5 (at most nine decimals)", s)
	}
	secs, err := strconv.ParseUint(cmp.Or(whole, "0"), 10, 63)
	if err != nil || secs >= uint64(math.MaxInt64/int64(time.Second)) {
		return 0, fmt.Errorf("clock offset %q: want seconds such as +1.5", s)
	}
	ns := uint64(0)
	if frac != "" {
		if ns, err = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("clock offset %q: want seconds such as +1.5", s)
		}
	}
	d := time.Duration(secs)*time.Second + time.Duration(ns)
	if neg {
		d = -d
	}
	return d, nil
}

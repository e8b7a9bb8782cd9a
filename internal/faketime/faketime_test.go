package faketime

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestOffset(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "+0.000"}, {1500 * time.Millisecond, "+1.500"}, {-2 * time.Second, "-2.000"}, {time.Hour, "+3600.000"}, {-time.Millisecond, "-0.001"},
	} {
		if got := Offset(tt.d); got != tt.want {
			t.Errorf("Offset(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestWriteAndVars(t *testing.T) {
	file := filepath.Join(t.TempDir(), "faketime.rc")
	if err := Write(file, -90*time.Second); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "-90.000\n" {
		t.Fatalf("offset file %q, %v", b, err)
	}
	for _, tt := range []struct {
		tcmalloc, perCall bool
		preload, cache    string
	}{
		{false, false, "LD_PRELOAD=" + Lib, "FAKETIME_CACHE_DURATION=1"},
		{true, true, "LD_PRELOAD=" + TCMalloc + " " + Lib, "FAKETIME_NO_CACHE=1"},
	} {
		v := Vars(file, tt.tcmalloc, tt.perCall)
		for _, want := range []string{tt.preload, tt.cache, FileVar + "=" + file, "FAKETIME_DONT_FAKE_MONOTONIC=1"} {
			if !slices.Contains(v, want) {
				t.Errorf("Vars(tcmalloc %v, per call %v) = %v: no %s", tt.tcmalloc, tt.perCall, v, want)
			}
		}
	}
}

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
		{500 * time.Microsecond, "+0.0005"}, {-1234567891 * time.Nanosecond, "-1.234567891"}, {time.Nanosecond, "+0.000000001"},
	} {
		if got := Offset(tt.d); got != tt.want {
			t.Errorf("Offset(%v) = %q, want %q", tt.d, got, tt.want)
		}
		if back, err := Parse(tt.want); err != nil || back != tt.d {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.want, back, err, tt.d)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "+1.5\n", want: 1500 * time.Millisecond}, {in: "-2", want: -2 * time.Second}, {in: "3", want: 3 * time.Second},
		{in: "-0.000", want: 0}, {in: ".25", want: 250 * time.Millisecond},
		{in: "", bad: true}, {in: "+", bad: true}, {in: "1.5s", bad: true}, {in: "+-1", bad: true},
		{in: "1.0000000001", bad: true}, {in: "99999999999", bad: true}, {in: "1e3", bad: true},
	} {
		got, err := Parse(tt.in)
		if tt.bad != (err != nil) || !tt.bad && got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v (an error: %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

// A jump and its heal, each a read-modify-write of the offset file, leave
// nothing behind, whatever the jump's digits (one rounded to milliseconds
// left a millisecond behind when its half-millisecond rounded up).
func TestJumpAndHealLeaveNoRemainder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "faketime.rc")
	shift := func(d time.Duration) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := Parse(string(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(file, cur+d); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(file, 0); err != nil {
		t.Fatal(err)
	}
	jumps := []time.Duration{587500 * time.Microsecond, 1000500 * time.Microsecond, -1234567891, 2*time.Second + 1, 10 * time.Millisecond}
	for _, d := range jumps {
		shift(d)
		shift(-d)
	}
	for _, d := range jumps { // overlapping: all jumps, then all heals
		shift(d)
	}
	for _, d := range jumps {
		shift(-d)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "+0.000\n" {
		t.Errorf("after every jump was healed the offset file reads %q (%v), want +0.000", b, err)
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

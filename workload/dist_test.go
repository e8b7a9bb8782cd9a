package workload

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseDist(t *testing.T) {
	tests := []struct {
		in      string
		want    Dist
		wantErr string
	}{
		{"0", Dist{Kind: "fixed"}, ""},
		{"2ms", Dist{Kind: "fixed", A: 2 * time.Millisecond}, ""},
		{"uniform:1ms-5ms", Dist{Kind: "uniform", A: time.Millisecond, B: 5 * time.Millisecond}, ""},
		{"exp:3ms", Dist{Kind: "exp", A: 3 * time.Millisecond}, ""},
		{"uniform:5ms-1ms", Dist{}, "max below min"},
		{"uniform:1ms", Dist{}, "min-max"},
		{"gauss:1ms", Dist{}, "unknown kind"},
		{"-1ms", Dist{}, "negative"},
		{"soon", Dist{}, "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDist(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if back, _ := ParseDist(got.String()); back != got {
				t.Fatalf("String %q does not parse back", got.String())
			}
		})
	}
}

func TestDistSampleBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	u := Dist{Kind: "uniform", A: time.Millisecond, B: 2 * time.Millisecond}
	var sum time.Duration
	e := Dist{Kind: "exp", A: time.Millisecond}
	const n = 20000
	for i := 0; i < n; i++ {
		if s := u.Sample(rng); s < u.A || s > u.B {
			t.Fatalf("uniform sample %v outside [%v, %v]", s, u.A, u.B)
		}
		sum += e.Sample(rng)
	}
	if mean := sum / n; mean < 900*time.Microsecond || mean > 1100*time.Microsecond {
		t.Fatalf("exp mean %v, want about 1ms", mean)
	}
}

func TestDistTextRoundTrip(t *testing.T) {
	for _, s := range []string{"0s", "2ms", "uniform:1ms-5ms", "exp:2ms"} {
		var d Dist
		if err := d.UnmarshalText([]byte(s)); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		b, _ := d.MarshalText()
		var back Dist
		if err := back.UnmarshalText(b); err != nil || back != d {
			t.Fatalf("%s: round trip gave %v (%v)", s, back, err)
		}
	}
	var d Dist
	if err := d.UnmarshalText([]byte("uniform:5ms")); err == nil {
		t.Fatal("a malformed distribution was accepted")
	}
}

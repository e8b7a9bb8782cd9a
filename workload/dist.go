// Package workload is what clients do with locks: the client loop, the
// critical sections (mutex, counter, tasks), the protected Store and the
// duration distributions. It knows nothing of servers or faults.
package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Dist is a distribution of durations: "0", "2ms" (fixed),
// "uniform:1ms-5ms", "exp:2ms" (exponential with that mean).
type Dist struct {
	Kind string // fixed, uniform, exp
	A, B time.Duration
}

// ParseDist reads a Dist; the error says which forms are accepted.
func ParseDist(s string) (Dist, error) {
	bad := func(err error) (Dist, error) {
		return Dist{}, fmt.Errorf("distribution %q: %v (want 2ms, uniform:1ms-5ms or exp:2ms)", s, err)
	}
	kind, arg, found := strings.Cut(s, ":")
	if !found {
		d, err := parseDur(s)
		if err != nil {
			return bad(err)
		}
		return Dist{Kind: "fixed", A: d}, nil
	}
	switch kind {
	case "uniform":
		lo, hi, ok := strings.Cut(arg, "-")
		if !ok {
			return bad(fmt.Errorf("uniform needs min-max"))
		}
		a, err := parseDur(lo)
		if err != nil {
			return bad(err)
		}
		b, err := parseDur(hi)
		if err != nil {
			return bad(err)
		}
		if b < a {
			return bad(fmt.Errorf("max below min"))
		}
		return Dist{Kind: "uniform", A: a, B: b}, nil
	case "exp":
		m, err := parseDur(arg)
		if err != nil {
			return bad(err)
		}
		return Dist{Kind: "exp", A: m}, nil
	default:
		return bad(fmt.Errorf("unknown kind %q", kind))
	}
}

func parseDur(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration")
	}
	return d, nil
}

// Sample draws one duration.
func (d Dist) Sample(rng *rand.Rand) time.Duration {
	switch d.Kind {
	case "uniform":
		if d.B == d.A {
			return d.A
		}
		return d.A + time.Duration(rng.Int64N(int64(d.B-d.A)+1))
	case "exp":
		return time.Duration(rng.ExpFloat64() * float64(d.A))
	default:
		return d.A
	}
}

// String is the form ParseDist reads.
func (d Dist) String() string {
	switch d.Kind {
	case "uniform":
		return fmt.Sprintf("uniform:%v-%v", d.A, d.B)
	case "exp":
		return fmt.Sprintf("exp:%v", d.A)
	default:
		return d.A.String()
	}
}

// MarshalText writes the form ParseDist reads.
func (d Dist) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a Dist, so scenario files and the worker protocol
// can hold one as a string.
func (d *Dist) UnmarshalText(b []byte) error {
	v, err := ParseDist(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

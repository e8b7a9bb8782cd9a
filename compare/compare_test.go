package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locklab/locklab/report"
)

func run(name string, tput, p99, hand float64, violations int) report.Run {
	return report.Run{Case: name, Approach: name, Clients: 1, Complete: true, AcquiresPerSec: tput,
		Acquire: report.Latency{P99: p99}, HandOff: report.Latency{P99: hand}, ViolationCount: violations, Linearizable: "yes"}
}

func TestCompare(t *testing.T) {
	base := run("a-c1", 1000, 100, 50, 0)
	for _, tc := range []struct {
		name string
		cur  report.Run
		want []string // substrings of the regressions, in order; none: no regression
	}{
		{"same", base, nil},
		{"within the bound", run("a-c1", 900, 114, 57, 0), nil},
		{"faster is no regression", run("a-c1", 2000, 10, 5, 0), nil},
		{"throughput fell", run("a-c1", 800, 100, 50, 0), []string{"throughput 800/s, 20% below the baseline's 1000/s"}},
		{"p99 rose", run("a-c1", 1000, 130, 50, 0), []string{"acquire p99 130µs, 30% above the baseline's 100µs"}},
		{"hand-off rose", run("a-c1", 1000, 100, 100, 0), []string{"hand-off p99 100µs, 100% above"}},
		{"new violation", run("a-c1", 1000, 100, 50, 2), []string{"2 safety violation(s), none in the baseline"}},
		{"incomplete: safety only", func() report.Run { r := run("a-c1", 10, 1e6, 1e6, 0); r.Complete = false; return r }(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compare(&report.Results{Runs: []report.Run{base}}, &report.Results{Runs: []report.Run{tc.cur}}, 0.15)
			if len(res.Rows) != 1 {
				t.Fatalf("rows %d", len(res.Rows))
			}
			got := res.Rows[0].Regressions
			if len(got) != len(tc.want) || res.Regressed() != (len(tc.want) > 0) {
				t.Fatalf("regressions %q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("regression %q, want %q", got[i], w)
				}
			}
		})
	}
}

func TestCompareUnmatchedCasesAndPrint(t *testing.T) {
	res := Compare(&report.Results{Runs: []report.Run{run("a-c1", 1000, 100, 0, 0), run("b-c1", 10, 1, 0, 0)}},
		&report.Results{Runs: []report.Run{run("a-c1", 500, 100, 0, 0), run("c-c1", 1, 1, 0, 0)}}, 0.15)
	if len(res.Rows) != 1 || strings.Join(res.OnlyBase, ",") != "b-c1" || strings.Join(res.OnlyNew, ",") != "c-c1" {
		t.Fatalf("%+v", res)
	}
	var b bytes.Buffer
	if err := Print(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-50%", "REGRESSION a-c1: throughput 500/s", "only in the baseline (not compared): b-c1", "not in the baseline (not compared): c-c1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseBound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"15%", 0.15, false}, {"0.15", 0.15, false}, {" 200% ", 2, false}, {"0", 0, false},
		{"15", 0, true}, {"-5%", 0, true}, {"abc", 0, true}, {"NaN", 0, true}, {"", 0, true},
	} {
		got, err := ParseBound(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseBound(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// Two runs on two server versions (two images) say which versions differ,
// above the table: what such a comparison is about.
func TestCompareNamesTheVersionsThatDiffer(t *testing.T) {
	base := &report.Results{Versions: map[string]string{"redis": "redis 7.0.15 (image locklab/redis:bookworm)", "go": "go1.26"},
		Runs: []report.Run{run("a-c1", 1000, 100, 50, 0)}}
	cur := &report.Results{Versions: map[string]string{"redis": "redis 8.0.2 (image locklab/redis:trixie)", "go": "go1.26"},
		Runs: []report.Run{run("a-c1", 1000, 100, 50, 0)}}
	res := Compare(base, cur, 0.15)
	if len(res.Versions) != 1 || res.Versions[0].Name != "redis" {
		t.Fatalf("versions that differ: %+v, want redis alone", res.Versions)
	}
	var out bytes.Buffer
	if err := Print(&out, res); err != nil {
		t.Fatal(err)
	}
	want := "redis: redis 8.0.2 (image locklab/redis:trixie) (baseline: redis 7.0.15 (image locklab/redis:bookworm))\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Fatalf("compare printed\n%s\nwant it to start with\n%s", out.String(), want)
	}
}

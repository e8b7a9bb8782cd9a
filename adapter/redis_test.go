package adapter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/conformance"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/all"
	"github.com/locklab/locklab/impls/memlock"
)

// startRedis starts one local Redis for the test, and makes this test
// binary the locklab that testdata/reference.yaml starts.
func startRedis(tb testing.TB) impls.Endpoints {
	tb.Helper()
	tb.Setenv("LOCKLAB", os.Args[0])
	c, err := cluster.StartLocal(context.Background(), cluster.ForServers(impls.Redis))
	if err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c.DirectEndpoints()
}

func reference(tb testing.TB) *Spec {
	tb.Helper()
	s, err := Load("testdata/reference.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestReferenceAdapter runs the Go reference adapter against a real Redis:
// grants, refusals, extend, release, and a kill that is a crash.
func TestReferenceAdapter(t *testing.T) {
	ep := startRedis(t)
	a := reference(t).Approach()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clk := &clock.Skewable{}
	l1, err := a.New(ctx, impls.Env{Endpoints: ep, Clock: clk, ClientID: 1, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Close()
	l2, err := a.New(ctx, impls.Env{Endpoints: ep, Clock: clk, ClientID: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	key := fmt.Sprintf("ref-%d", time.Now().UnixNano())
	before := clk.Now()
	lease, err := l1.Acquire(ctx, key, impls.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if vu := lease.ValidUntil(); vu.Before(before.Add(4*time.Second)) || vu.After(clk.Now().Add(5*time.Second)) {
		t.Errorf("ValidUntil %v: want about 5s from the acquire", vu)
	}
	if _, err := l2.Acquire(ctx, key, impls.AcquireOptions{TTL: 5 * time.Second, Try: true}); !errors.Is(err, impls.ErrNotAcquired) {
		t.Errorf("second acquire: %v, want not acquired", err)
	}
	if err := lease.Extend(ctx, 8*time.Second); err != nil {
		t.Errorf("extend: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
	if err := lease.Release(ctx); !errors.Is(err, impls.ErrNotHeld) {
		t.Errorf("second release: %v, want not held", err)
	}
	held, err := l2.Acquire(ctx, key, impls.AcquireOptions{TTL: 5 * time.Second, Try: true})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	p := l2.(*Locker)
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := held.Release(ctx); !errors.Is(err, impls.ErrCrashed) {
		t.Errorf("release after a kill: %v, want ErrCrashed", err)
	}
}

// BenchmarkCycle is one client's uncontended acquire+release cycle on
// Redis, in-process and through the protocol (locklab adapt): the
// protocol's cost.
func BenchmarkCycle(b *testing.B) {
	ep := startRedis(b)
	inProcess, err := all.Registry().Get("redis-setnx-px-lua")
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range []impls.Approach{inProcess, reference(b).Approach()} {
		b.Run(a.Name, func(b *testing.B) {
			l, err := a.New(context.Background(), impls.Env{Endpoints: ep, Clock: &clock.Skewable{}, ClientID: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			key := fmt.Sprintf("bench-%d", time.Now().UnixNano())
			b.ResetTimer()
			for range b.N {
				lease, err := l.Acquire(ctx, key, impls.AcquireOptions{TTL: 10 * time.Second})
				if err != nil {
					b.Fatal(err)
				}
				if err := lease.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCycleSideBySide alternates two bare line round trips to an
// echoing process, one in-process cycle and one cycle through the protocol
// on the same Redis (a cycle is two requests), so all three see the same
// machine. Medians: adapter/in-process is the ratio of their cycles per
// second; hop-ns/request what the protocol adds to one request, and
// hop/echo that in bare pipe round trips.
func BenchmarkCycleSideBySide(b *testing.B) {
	ep := startRedis(b)
	inProcess, err := all.Registry().Get("redis-setnx-px-lua")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var lockers [2]impls.Locker
	for i, a := range []impls.Approach{inProcess, reference(b).Approach()} {
		if lockers[i], err = a.New(ctx, impls.Env{Endpoints: ep, Clock: &clock.Skewable{}, ClientID: i + 1}); err != nil {
			b.Fatal(err)
		}
		defer lockers[i].Close()
	}
	inProc, viaAdapter, echoRT := alternate(b, lockers, fmt.Sprintf("bench-%d", time.Now().UnixNano()))
	hop := (viaAdapter - inProc) / 2
	b.ReportMetric(float64(inProc.Nanoseconds()), "in-process-ns/cycle")
	b.ReportMetric(float64(viaAdapter.Nanoseconds()), "adapter-ns/cycle")
	b.ReportMetric(float64(inProc)/float64(viaAdapter), "adapter/in-process")
	b.ReportMetric(float64(echoRT.Nanoseconds()), "echo-ns/roundtrip")
	b.ReportMetric(float64(hop.Nanoseconds()), "hop-ns/request")
	b.ReportMetric(float64(hop)/float64(echoRT), "hop/echo")
}

// BenchmarkHopWithoutAServer is BenchmarkCycleSideBySide's hop without
// a server behind it: the in-memory lock in-process and served over the
// protocol by another process (the test binary as adapt-memory), beside
// the bare echo, alternated, medians. A cycle is two requests.
func BenchmarkHopWithoutAServer(b *testing.B) {
	ctx := context.Background()
	var lockers [2]impls.Locker
	for i, a := range []impls.Approach{memlock.NewService(1).Approach("memory"), memoryAdapter(b).Approach()} {
		var err error
		if lockers[i], err = a.New(ctx, memoryEnv(i+1)); err != nil {
			b.Fatal(err)
		}
		defer lockers[i].Close()
	}
	inProc, viaAdapter, echoRT := alternate(b, lockers, "k")
	hop := (viaAdapter - inProc) / 2
	b.ReportMetric(float64(echoRT.Nanoseconds()), "echo-ns/roundtrip")
	b.ReportMetric(float64(hop.Nanoseconds()), "hop-ns/request")
	b.ReportMetric(float64(hop)/float64(echoRT), "hop/echo")
}

// memoryAdapter is the in-memory lock served over the protocol by this
// test binary as adapt-memory.
func memoryAdapter(tb testing.TB) *Spec {
	tb.Helper()
	spec := filepath.Join(tb.TempDir(), "memory.yaml")
	yaml := "name: ref-memory\ncommand: [" + strconv.Quote(os.Args[0]) + ", adapt-memory]\nserver: redis\nnodes: 1\n" +
		"capabilities: [ttl]\nsafe: true\nstart-timeout: 10s\n"
	if err := os.WriteFile(spec, []byte(yaml), 0o644); err != nil {
		tb.Fatal(err)
	}
	s, err := Load(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// memoryEnv is a client's environment for the in-memory lock: its
// endpoint is never dialled.
func memoryEnv(id int) impls.Env {
	return impls.Env{Endpoints: impls.Endpoints{impls.Redis: {Addrs: []string{"127.0.0.1:1"}}}, Clock: &clock.Skewable{}, ClientID: id}
}

// alternate runs b.N rounds of two bare round trips to an echoing
// process, then one acquire+release cycle of key on each of lockers (the
// in-process one first), and gives the medians: a cycle in-process,
// through the protocol, and one echo.
func alternate(b *testing.B, lockers [2]impls.Locker, key string) (inProc, viaAdapter, echoRT time.Duration) {
	ctx := context.Background()
	echo := startEcho(b)
	cycles := [2][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
	echoes := make([]time.Duration, 0, 2*b.N)
	b.ResetTimer()
	for range b.N {
		for range 2 {
			start := time.Now()
			echo.roundTrip(b)
			echoes = append(echoes, time.Since(start))
		}
		for i, l := range lockers {
			start := time.Now()
			lease, err := l.Acquire(ctx, key, impls.AcquireOptions{TTL: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			if err := lease.Release(ctx); err != nil {
				b.Fatal(err)
			}
			cycles[i] = append(cycles[i], time.Since(start))
		}
	}
	b.StopTimer()
	return median(cycles[0]), median(cycles[1]), median(echoes)
}

// median of ds (sorted in place).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// echoProcess is this test binary started as `echo`: a bare line round
// trip through two pipes and another process's wake-up.
type echoProcess struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func startEcho(tb testing.TB) *echoProcess { return startEchoing(tb, "echo") }

// startEchoing starts this test binary as mode, a process answering each
// line with one.
func startEchoing(tb testing.TB, mode string) *echoProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0], mode)
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.Close(); cmd.Wait() })
	return &echoProcess{in: in, out: bufio.NewReader(out)}
}

// echoedLine is what an echo round trip sends: a line the size of an
// acquire request.
const echoedLine = `{"type":"request","id":1,"op":"acquire","key":"k0","ttl_ms":10000,"wait":true,"timeout_ms":10000}` + "\n"

// roundTrip sends echoedLine and reads the answer.
func (e *echoProcess) roundTrip(tb testing.TB) {
	if _, err := io.WriteString(e.in, echoedLine); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.out.ReadSlice('\n'); err != nil {
		tb.Fatal(err)
	}
}

// TestAdapterWatchdogConforms runs the suite's watchdog tests through the
// protocol: a watchdog's renewals told as events keep the holder's belief
// and are reported as the built-in's are; a lock that declares a watchdog
// and has none fails.
func TestAdapterWatchdogConforms(t *testing.T) {
	t.Setenv("LOCKLAB", os.Args[0])
	c, err := cluster.StartLocal(context.Background(), cluster.ForServers(impls.Redis))
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	noWatchdog := reference(t)
	noWatchdog.Name, noWatchdog.Caps.Watchdog = "ref-no-watchdog", true
	watchdog, err := Load("testdata/reference-watchdog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec *Spec
		want map[string]conformance.Status // by test
	}{
		{watchdog, map[string]conformance.Status{"WatchdogKeepsTheLock": conformance.Passed, "WatchdogStopsAtRelease": conformance.Passed}},
		{noWatchdog, map[string]conformance.Status{"WatchdogKeepsTheLock": conformance.Failed}},
	}
	for _, tt := range tests {
		t.Run(tt.spec.Name, func(t *testing.T) {
			h, err := conformance.HarnessFor(c, tt.spec.Approach())
			if err != nil {
				t.Fatal(err)
			}
			run := conformance.Standalone{Match: func(name string) bool { return tt.want[path.Base(name)] != "" }}
			results, err := run.Run(context.Background(), tt.spec.Name, func(t conformance.T) { conformance.RunT(t, h) })
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, r := range results {
				want, ok := tt.want[path.Base(r.Name)]
				if !ok {
					continue
				}
				ran++
				t.Logf("%s: %s: %s", r.Name, r.Status, strings.Join(r.Output, "; "))
				if r.Status != want {
					t.Errorf("%s: %s, want %s", r.Name, r.Status, want)
				}
			}
			if ran != len(tt.want) {
				t.Fatalf("%d of the %d tests ran: %v", ran, len(tt.want), results)
			}
		})
	}
}

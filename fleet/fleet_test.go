package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/impls/memlock"
	"github.com/locklab/locklab/stall"
	"github.com/locklab/locklab/workload"
)

// workerArg makes this test binary a `locklab worker` (see TestMain), so
// worker fleets run real processes without building locklab. Each worker
// has its own in-memory lock table: these tests are about the fleet, not
// about mutual exclusion.
const workerArg = "locklab-fleet-test-worker"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		if err := ServeWorker(context.Background(), registry(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func registry() *impls.Registry {
	r := impls.NewRegistry()
	r.Register(memlock.NewService(1).Approach("memory"))
	if dir := os.Getenv(flakyDirEnv); dir != "" {
		r.Register(flakyApproach(dir))
	}
	return r
}

// flakyDirEnv hands a test's flaky approach's marker directory to its
// worker processes.
const flakyDirEnv = "LOCKLAB_FLEET_TEST_FLAKY"

// events collects what a fleet records, and which slot each process took.
type events struct {
	mu     sync.Mutex
	evs    []history.Event
	slotOf map[int]int
}

func (e *events) Record(ev history.Event) history.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return ev
}

func (e *events) bind(proc, slot int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.slotOf[proc] = slot
}

// count is how many events of f process proc recorded (-1: any process).
func (e *events) count(proc int, f string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.evs {
		if (proc < 0 || ev.Proc == proc) && ev.F == f {
			n++
		}
	}
	return n
}

const procBase = 10

// config is a fleet of n memory-lock clients on the counter workload (so
// worker processes call the store over their pipe) for d.
func config(t *testing.T, processes bool, n int, d time.Duration) (Config, *events) {
	t.Helper()
	a, err := registry().Get("memory")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec := &events{slotOf: map[int]int{}}
	mono := clock.NewMonotonic()
	spec := workload.Spec{Kind: workload.Counter, Clients: n, Keys: 2, Hold: workload.Dist{Kind: "fixed", A: time.Millisecond},
		TTL: time.Second, Duration: d, Seed: 1, KeyPrefix: "t/", ProcBase: procBase}
	spec.Store = workload.NewStore(rec, mono, false, 1000)
	return Config{Approach: a, Workload: spec, Processes: processes, Bind: rec.bind, Recorder: rec, Mono: mono,
		Progress: &workload.Progress{}, WorkerArgv: []string{exe, workerArg}, Dir: t.TempDir()}, rec
}

// Both kinds run the same workload behind the same interface: every slot
// records as its own process from ProcBase on, is bound to its slot before
// it records, and works on the store; only worker slots have a process.
func TestKinds(t *testing.T) {
	for _, processes := range []bool{false, true} {
		t.Run(fmt.Sprintf("processes=%v", processes), func(t *testing.T) {
			cfg, rec := config(t, processes, 3, 300*time.Millisecond)
			f, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			slots := f.Slots()
			if len(slots) != 3 {
				t.Fatalf("%d slots, want 3", len(slots))
			}
			for i, s := range slots {
				if s.Index != i || s.Clock == nil || (s.Process != nil) != processes {
					t.Errorf("slot %d = %+v", i, s)
				}
			}
			// A clock fault moves the slot's lease clock (a worker's is
			// told over its pipe, and handed to its replacements).
			slots[2].Clock.Shift(-time.Second)
			if got := slots[2].Clock.Offset(); got != -time.Second {
				t.Errorf("offset %v after a -1s clock fault", got)
			}
			st, err := f.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.Acquired == 0 || st.Procs != 3 || st.Crashed != 0 {
				t.Fatalf("stats: acquired %d, procs %d, crashed %d", st.Acquired, st.Procs, st.Crashed)
			}
			if got := cfg.Progress.Acquired.Load(); got != st.Acquired {
				t.Errorf("progress counted %d acquires, stats %d", got, st.Acquired)
			}
			for i := range 3 {
				proc := procBase + i
				if rec.slotOf[proc] != i || rec.count(proc, history.Acquire) == 0 {
					t.Errorf("process %d: bound to slot %d (want %d), %d acquire events", proc, rec.slotOf[proc], i, rec.count(proc, history.Acquire))
				}
			}
			if rec.count(-1, history.Read) == 0 || rec.count(-1, history.Write) == 0 {
				t.Error("no store reads or writes recorded")
			}
		})
	}
}

// A killed worker is recorded as crashed at the moment of the kill and
// replaced under a new process id, which takes its slot over.
func TestWorkerKilledIsRecordedAndReplaced(t *testing.T) {
	cfg, rec := config(t, true, 1, 1500*time.Millisecond)
	f, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st workload.Stats
	done := make(chan error, 1)
	go func() {
		var err error
		st, err = f.Run(context.Background())
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	p := f.Slots()[0].Process
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	killed := cfg.Mono.Nanos()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.Crashed != 1 || st.Replaced < 1 || st.Procs < 2 {
		t.Fatalf("crashed %d, replaced %d, procs %d; want the kill counted and replaced", st.Crashed, st.Replaced, st.Procs)
	}
	if rec.count(procBase, history.Crash) != 1 {
		t.Fatal("no crash recorded for the killed process")
	}
	for _, ev := range rec.evs {
		if ev.F == history.Crash && (ev.T < killed || ev.T > killed+int64(time.Second)) {
			t.Errorf("crash stamped %v after the kill", time.Duration(ev.T-killed))
		}
	}
	if rec.slotOf[procBase+1] != 0 || rec.count(procBase+1, history.Acquire) == 0 {
		t.Fatal("the replacement did not take slot 0 as process procBase+1")
	}
}

// A worker that cannot start its client is named in the error, and New
// leaves nothing running; so does Close before Run.
func TestWorkersLeaveNothingRunning(t *testing.T) {
	t.Run("unknown approach", func(t *testing.T) {
		cfg, _ := config(t, true, 3, time.Second)
		cfg.Approach = impls.Approach{Name: "nope"}
		_, err := New(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "unknown approach") || !strings.Contains(err.Error(), "client ") {
			t.Fatalf("err = %v", err)
		}
		if n := children(t); n != 0 {
			t.Fatalf("%d worker processes left running", n)
		}
	})
	t.Run("closed before running", func(t *testing.T) {
		cfg, _ := config(t, true, 3, time.Hour)
		f, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n := children(t); n != 3 {
			t.Fatalf("%d worker processes after New, want 3", n)
		}
		f.Close()
		if n := children(t); n != 0 {
			t.Fatalf("%d worker processes left running", n)
		}
	})
}

// Goroutine clients that cannot connect fail New.
func TestGoroutinesThatCannotConnect(t *testing.T) {
	cfg, _ := config(t, false, 3, time.Second)
	cfg.Approach.New = func(context.Context, impls.Env) (impls.Locker, error) { return nil, errors.New("refused") }
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "connect clients: refused") {
		t.Fatalf("err = %v", err)
	}
}

// children counts this process's live child processes.
func children(t *testing.T) int {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		fields := strings.Fields(rest) // state, ppid, ...
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(os.Getpid()) {
			n++
		}
	}
	return n
}

// Finish ends a run long before its duration, for both kinds: holds under
// way are cut (a 10 s hold here), every held lock is released, and Run
// returns.
func TestFinishEndsTheRunEarly(t *testing.T) {
	for _, processes := range []bool{false, true} {
		t.Run(fmt.Sprintf("processes=%v", processes), func(t *testing.T) {
			cfg, rec := config(t, processes, 2, time.Minute)
			cfg.Workload.Hold = workload.Dist{Kind: "fixed", A: 10 * time.Second}
			f, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			time.AfterFunc(500*time.Millisecond, f.Finish)
			stalls := stall.NewWatch(t.Context())
			began := time.Now()
			st, err := f.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(began); took > 5*time.Second+stalls.Within(began, began.Add(took)) {
				t.Fatalf("Run returned %v after Finish at 500 ms: the run went on", took)
			}
			if st.Acquired == 0 || rec.count(-1, history.Release) < 2*int(st.Acquired) {
				t.Fatalf("%d acquired, %d release events: want every grant released", st.Acquired, rec.count(-1, history.Release))
			}
			// The cut hold made no write.
			if n := rec.count(-1, history.Write); n != 0 {
				t.Fatalf("%d writes after holds cut short by Finish, want none", n)
			}
		})
	}
}

// A worker's draws depend on its case and its place in it, not on the
// process ids the session gave out before it: the same case, run at two
// places of a session (explore) or alone (locklab run on the file explore
// wrote), picks the same keys in the same order.
func TestWorkerDrawsDoNotDependOnProcBase(t *testing.T) {
	keys := func(base int) []string {
		cfg, rec := config(t, true, 1, 200*time.Millisecond)
		cfg.Workload.Keys, cfg.Workload.ProcBase = 8, base
		f, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var out []string
		for _, ev := range rec.evs {
			if ev.F == history.Acquire && ev.Type == history.Invoke && len(out) < 6 {
				out = append(out, ev.Key)
			}
		}
		if len(out) < 6 {
			t.Fatalf("ProcBase %d: %d acquires in 200ms, want 6 or more", base, len(out))
		}
		return out
	}
	a, b := keys(procBase), keys(procBase+117)
	if strings.Join(a, " ") != strings.Join(b, " ") {
		t.Errorf("keys drawn with ProcBase %d: %v; with %d: %v", procBase, a, procBase+117, b)
	}
}

// flakyApproach is memory whose first connect of each client fails, as a
// starved machine's first pings time out: the marker files in dir say
// which clients have failed once.
func flakyApproach(dir string) impls.Approach {
	a := memlock.NewService(1).Approach("flaky")
	inner := a.New
	a.New = func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		marker := filepath.Join(dir, strconv.Itoa(env.ClientID))
		if _, err := os.Stat(marker); err != nil {
			_ = os.WriteFile(marker, nil, 0o644)
			return nil, fmt.Errorf("flaky: %w: first connect refused", impls.ErrUnavailable)
		}
		return inner(ctx, env)
	}
	return a
}

// A first client that cannot connect is connected again: the case runs,
// and each slot's client records as its own process id, every event of it
// from the try that connected. Worker processes say only that they could
// not connect; goroutines' clients are tried again while unavailable.
func TestFirstClientConnectedAgainAfterAFailedConnect(t *testing.T) {
	for _, processes := range []bool{true, false} {
		t.Run(fmt.Sprintf("processes=%v", processes), func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(flakyDirEnv, dir)
			cfg, rec := config(t, processes, 2, 300*time.Millisecond)
			cfg.Approach = flakyApproach(dir)
			ctx := context.Background()
			f, err := New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := f.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Acquired == 0 {
				t.Fatalf("no grants: %+v", st)
			}
			for slot := range 2 {
				if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(procBase+slot))); err != nil {
					t.Errorf("client %d never failed a connect: %v", slot, err)
				}
				if n := rec.count(procBase+slot, history.Acquire); n == 0 {
					t.Errorf("process %d recorded no acquire", procBase+slot)
				}
			}
		})
	}
}

// slowWrites records a write 300 ms late, saying on began when it starts.
type slowWrites struct {
	*events
	began chan struct{}
	once  sync.Once
}

func (s *slowWrites) Record(ev history.Event) history.Event {
	if ev.F == history.Write {
		s.once.Do(func() { close(s.began) })
		time.Sleep(300 * time.Millisecond)
	}
	return s.events.Record(ev)
}

// A hang returns once the worker's steps are halted and the write it had
// under way is on record: a fault that then asks whether the holder wrote
// must not read "no" for a write that lands after it.
func TestHangReturnsWithTheWriteUnderWayRecorded(t *testing.T) {
	cfg, rec := config(t, true, 1, 3*time.Second)
	slow := &slowWrites{events: rec, began: make(chan struct{})}
	cfg.Workload.Store = workload.NewStore(slow, cfg.Mono, false, 1000)
	f, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() {
		_, err := f.Run(context.Background())
		done <- err
	}()
	select {
	case <-slow.began:
	case err := <-done:
		t.Fatalf("run ended before any write: %v", err)
	}
	p := f.Slots()[0].Process
	if err := p.Hang(); err != nil {
		t.Fatal(err)
	}
	if n := rec.count(-1, history.Write); n == 0 {
		t.Error("the hang returned before the write under way was recorded")
	}
	if err := p.Unhang(); err != nil {
		t.Fatal(err)
	}
	f.Finish()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

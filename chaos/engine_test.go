package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/history"
	"github.com/locklab/locklab/stall"
)

// memRecorder keeps nemesis events; the engine serializes its calls.
type memRecorder struct{ events []recorded }

type recorded struct {
	Type history.Type
	history.NemesisValue
}

func (m *memRecorder) Nemesis(typ history.Type, v history.NemesisValue) {
	m.events = append(m.events, recorded{typ, v})
}

// lines renders events as "id op type target" for comparisons.
func (m *memRecorder) lines() []string {
	var out []string
	for _, ev := range m.events {
		out = append(out, fmt.Sprintf("%d %s %s %s %s", ev.ID, ev.Fault, ev.Op, ev.Type, ev.Target))
	}
	return out
}

// fakeProc records the signals it gets.
type fakeProc struct {
	mu    sync.Mutex
	calls []string
	err   error // returned by Resume
}

func (p *fakeProc) call(c string) { p.mu.Lock(); p.calls = append(p.calls, c); p.mu.Unlock() }
func (p *fakeProc) Pause() error  { p.call("pause"); return nil }
func (p *fakeProc) Resume() error { p.call("resume"); return p.err }
func (p *fakeProc) Kill() error   { p.call("kill"); return nil }
func (p *fakeProc) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// fakeLab resolves client selectors to fixed targets.
type fakeLab map[string]Target

func (l fakeLab) Resolve(_ context.Context, sel Selector, _ *rand.Rand) ([]Target, error) {
	t, ok := l[sel.Client]
	if !ok {
		return nil, fmt.Errorf("client %q: %w", sel.Client, ErrNoTarget)
	}
	return []Target{t}, nil
}

func client(name string) Selector { return Selector{Client: name} }

func plan(t *testing.T, dur time.Duration, steps ...Step) []Planned {
	t.Helper()
	p, err := Compile(steps, 1, dur)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEngineRunsPlan: timed heals, an instantaneous crash, and a fault left
// for HealAll; every injection recorded as invoke, ok, stop under one id.
func TestEngineRunsPlan(t *testing.T) {
	p1, p2 := &fakeProc{}, &fakeProc{}
	clk := &clock.Skewable{}
	lab := fakeLab{
		"1": {Kind: TargetClient, Name: "client 1", Process: p1, Clock: clk},
		"2": {Kind: TargetClient, Name: "client 2", Process: p2},
	}
	rec := &memRecorder{}
	e := NewEngine(lab, rec, nil)
	stalls := stall.NewWatch(t.Context())
	start := time.Now()
	err := e.Run(context.Background(), start, plan(t, time.Minute,
		Step{Fault: &ClientClock{Offset: Duration(time.Hour)}, Target: client("1")},
		Step{Fault: &ClientPause{}, Target: client("1"), At: ms(10), For: ms(100)},
		Step{Fault: &ClientCrash{}, Target: client("2"), At: ms(60)},
	))
	if err != nil {
		t.Fatal(err)
	}
	// Waiting for the plan's end would take a minute; a run on time takes
	// 110 ms, and however long this process stood still besides.
	took := time.Since(start)
	if still := stalls.Within(start, start.Add(took)); took < 110*time.Millisecond || took > time.Second+still {
		t.Errorf("Run took %v (%v of it standing still), want the plan's 110ms (it waits for timed heals only)", took, still)
	}
	if got := p1.got(); !reflect.DeepEqual(got, []string{"pause", "resume"}) {
		t.Errorf("client 1 got %v", got)
	}
	if got := p2.got(); !reflect.DeepEqual(got, []string{"kill"}) {
		t.Errorf("client 2 got %v", got)
	}
	if clk.Offset() != time.Hour || !reflect.DeepEqual(e.Active(), []int{1}) {
		t.Fatalf("before HealAll: offset %v, active %v; want the clock jump still in place", clk.Offset(), e.Active())
	}
	if err := e.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if clk.Offset() != 0 || len(e.Active()) != 0 {
		t.Fatalf("after HealAll: offset %v, active %v", clk.Offset(), e.Active())
	}
	// Each injection's own events in order, under one id of its own;
	// between injections the order is the clock's (the jump at 0 opens
	// the run in a goroutine of its own, and under load the pause 10 ms
	// later was seen to come first), but for the jump's heal, by HealAll,
	// which comes last.
	want := map[string][]string{
		"client-clock": {"start invoke client 1", "start ok client 1", "stop ok client 1"},
		"client-pause": {"start invoke client 1", "start ok client 1", "stop ok client 1"},
		"client-crash": {"start invoke client 2", "start ok client 2", "stop ok client 2"},
	}
	got, ids, byFault := map[string][]string{}, map[string]int64{}, map[string]recorded{}
	for _, ev := range rec.events {
		got[ev.Fault] = append(got[ev.Fault], fmt.Sprintf("%s %s %s", ev.Op, ev.Type, ev.Target))
		if id, ok := ids[ev.Fault]; ok && id != ev.ID {
			t.Errorf("%s's events under ids %d and %d", ev.Fault, id, ev.ID)
		}
		ids[ev.Fault] = ev.ID
		if _, ok := byFault[ev.Fault]; !ok {
			byFault[ev.Fault] = ev
		}
	}
	last := rec.events[len(rec.events)-1]
	if !reflect.DeepEqual(got, want) || len(ids) != 3 || ids["client-clock"] == ids["client-pause"] || last.Fault != "client-clock" {
		t.Fatalf("events:\n%s\nwant, by fault, the clock's heal last:\n%v", strings.Join(rec.lines(), "\n"), want)
	}
	if ev := byFault["client-clock"]; ev.Selector != "{client: 1}" || ev.Params["offset"] != "1h0m0s" || ev.Threat != ThreatClockJump {
		t.Errorf("the clock jump's first event %+v", ev)
	}
	if ev := byFault["client-pause"]; ev.For != "100ms" {
		t.Errorf("pause event For = %v", ev.For)
	}
}

// TestEngineFailures: a step with no target now is recorded and skipped; a
// fault not available on its target, a failed injection and a failed heal
// are recorded and returned.
func TestEngineFailures(t *testing.T) {
	bad := &fakeProc{err: errors.New("no such process")}
	lab := fakeLab{
		"goroutine": {Kind: TargetClient, Name: "client 3", Clock: &clock.Skewable{}},
		"bad":       {Kind: TargetClient, Name: "client 4", Process: bad},
	}
	failing := fakeFault{healed: new([]string), inject: func(Target) error { return errors.New("boom") }}
	rec := &memRecorder{}
	e := NewEngine(lab, rec, nil)
	err := e.Run(context.Background(), time.Now(), []Planned{
		{At: 0, Fault: &ClientPause{}, Target: client("nobody")},
		{At: ms(20).D(), Fault: &ClientPause{}, Target: client("goroutine")},
		{At: ms(40).D(), Fault: failing, Target: client("bad")},
		{At: ms(60).D(), Fault: &ClientPause{}, Target: client("bad"), For: ms(20).D()},
	})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("Run error %v, want the unavailable fault, the failed injection and the failed heal", err)
	}
	if strings.Contains(err.Error(), "nobody") {
		t.Errorf("no target now is not a lab failure: %v", err)
	}
	want := []string{
		"1 client-pause start invoke ", "1 client-pause start fail ",
		"2 client-pause start invoke client 3", "2 client-pause start fail client 3",
		"3 fake start invoke client 4", "3 fake start fail client 4",
		"4 client-pause start invoke client 4", "4 client-pause start ok client 4", "4 client-pause stop info client 4",
	}
	if got := rec.lines(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rec.events[1].Error == "" || rec.events[8].Error == "" {
		t.Error("fail and info events carry no error")
	}
}

// TestEngineCancelThenHealAll: a run cancelled while faults are in place
// returns at once and leaves them to HealAll, which heals newest first even
// on the cancelled context, and stops further injections.
func TestEngineCancelThenHealAll(t *testing.T) {
	order := []string{}
	heals := fakeFault{healed: &order, inject: func(Target) error { return nil }}
	lab := fakeLab{"a": {Name: "a"}, "b": {Name: "b"}}
	rec := &memRecorder{}
	e := NewEngine(lab, rec, nil)
	ctx, cancel := context.WithCancel(context.Background())
	stalls := stall.NewWatch(t.Context())
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	start := time.Now()
	err := e.Run(ctx, start, []Planned{
		{At: 0, Fault: heals, Target: client("a"), For: time.Hour},
		{At: ms(5).D(), Fault: heals, Target: client("b"), For: time.Hour},
		{At: time.Hour, Fault: heals, Target: client("a")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Its faults heal in an hour: a run that waited for them is a run
	// that did not stop on the cancel.
	if took := time.Since(start); took > time.Second+stalls.Within(start, start.Add(took)) {
		t.Fatalf("Run returned %v after the cancel", took)
	}
	if !reflect.DeepEqual(e.Active(), []int{1, 2}) {
		t.Fatalf("active %v, want [1 2]", e.Active())
	}
	if err := e.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(order, []string{"b", "a"}) {
		t.Fatalf("healed %v, want newest first [b a]", order)
	}
	// After HealAll nothing more is injected.
	before := len(rec.events)
	if err := e.Run(context.Background(), time.Now(), []Planned{{Fault: heals, Target: client("a")}}); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != before {
		t.Fatalf("an engine that healed all injected again: %v", rec.lines()[before:])
	}
}

// chanWaiter lets a trigger fire when its channel closes.
type chanWaiter chan struct{}

func (w chanWaiter) Wait(ctx context.Context, _ When) (time.Duration, error) {
	select {
	case <-w:
		return 0, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// TestEngineTrigger: a when step injects once its condition holds, not
// before; without a Waiter the plan is refused.
func TestEngineTrigger(t *testing.T) {
	p := &fakeProc{}
	lab := fakeLab{"holder": {Kind: TargetClient, Name: "client 5", Process: p}}
	holder := Selector{Client: ClientHolder, Key: "k0"}
	steps := plan(t, time.Second, Step{Fault: &ClientPause{}, Target: holder, When: &When{Holding: "k0"}, For: ms(10)})
	if err := NewEngine(lab, &memRecorder{}, nil).Run(context.Background(), time.Now(), steps); err == nil {
		t.Fatal("a trigger ran without a Waiter")
	}
	w := make(chanWaiter)
	e := NewEngine(lab, &memRecorder{}, w)
	done := make(chan error)
	go func() { done <- e.Run(context.Background(), time.Now(), steps) }()
	time.Sleep(30 * time.Millisecond)
	if got := p.got(); len(got) != 0 {
		t.Fatalf("injected before the condition held: %v", got)
	}
	close(w)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := p.got(); !reflect.DeepEqual(got, []string{"pause", "resume"}) {
		t.Fatalf("got %v", got)
	}
}

// timedProc notes when it was paused.
type timedProc struct {
	fakeProc
	paused chan time.Time
}

func (p *timedProc) Pause() error { p.paused <- time.Now(); return p.fakeProc.Pause() }

// TestEngineTriggerAfter: `when: {holding: k, after: d}` injects d past the
// moment the holder was found, never sooner.
func TestEngineTriggerAfter(t *testing.T) {
	p := &timedProc{paused: make(chan time.Time, 1)}
	lab := fakeLab{"holder": {Kind: TargetClient, Name: "client 5", Process: p}}
	const after = 150 * time.Millisecond
	steps := plan(t, time.Second, Step{Fault: &ClientPause{}, Target: Selector{Client: ClientHolder, Key: "k0"},
		When: &When{Holding: "k0", After: Duration(after)}, For: ms(10)})
	w := make(chanWaiter)
	done := make(chan error)
	go func() { done <- NewEngine(lab, &memRecorder{}, w).Run(context.Background(), time.Now(), steps) }()
	found := time.Now()
	close(w)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := (<-p.paused).Sub(found); d < after {
		t.Fatalf("injected %v after the holder was found, want at least %v", d, after)
	}
	if s := steps[0].When.String(); s != "holding k0, after 150ms" {
		t.Errorf("String() = %q", s)
	}
}

// lateWaiter's condition came true late before Wait was called.
type lateWaiter time.Duration

func (w lateWaiter) Wait(context.Context, When) (time.Duration, error) { return time.Duration(w), nil }

// timesProc notes when it was paused and resumed.
type timesProc struct {
	fakeProc
	mu              sync.Mutex
	paused, resumed time.Time
}

func (p *timesProc) Pause() error {
	p.mu.Lock()
	p.paused = time.Now()
	p.mu.Unlock()
	return p.fakeProc.Pause()
}

func (p *timesProc) Resume() error {
	p.mu.Lock()
	p.resumed = time.Now()
	p.mu.Unlock()
	return p.fakeProc.Resume()
}

// TestEngineTriggerCountsFromTheEvent: a when step's after and for count
// from the moment its condition came true, not from when the lab learned
// of it: told a second late, a step with after 1.2 s injects 0.2 s after
// the wait returned, and one of for 1.5 s heals 0.5 s after its injection,
// where counting from the wait would give 1.2 s and 1.5 s. A target the
// step waits for (the key's next holder, found 0.4 s later) takes the
// fault for all of its for from then.
func TestEngineTriggerCountsFromTheEvent(t *testing.T) {
	const late = time.Second
	for _, tt := range []struct {
		name        string
		after, for_ time.Duration
		found       time.Duration // how long the target takes to find
		wantInject  time.Duration // after the wait returned
		wantLasts   time.Duration
	}{
		{"for", 0, 1500 * time.Millisecond, 0, 0, 500 * time.Millisecond},
		{"after", 1200 * time.Millisecond, 100 * time.Millisecond, 0, 200 * time.Millisecond, 100 * time.Millisecond},
		{"for already over", 0, 300 * time.Millisecond, 0, 0, 0},
		{"a target found later", 0, 1500 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &timesProc{}
			lab := slowLab{fakeLab{"holder": {Kind: TargetClient, Name: "client 5", Process: p}}, tt.found}
			steps := plan(t, 5*time.Second, Step{Fault: &ClientPause{}, Target: Selector{Client: ClientHolder, Key: "k0"},
				When: &When{Holding: "k0", After: Duration(tt.after)}, For: Duration(tt.for_)})
			stalls := stall.NewWatch(t.Context())
			waited := time.Now()
			if err := NewEngine(lab, &memRecorder{}, lateWaiter(late)).Run(context.Background(), time.Now(), steps); err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			inject, healed := p.paused.Sub(waited), p.resumed.Sub(waited)
			p.mu.Unlock()
			// Never sooner than the event's moment allows; later only by
			// what the machine stood still.
			slack := 300*time.Millisecond + stalls.Within(waited, time.Now())
			if inject < tt.wantInject || inject > tt.wantInject+slack {
				t.Errorf("injected %v after the wait returned, want %v", inject, tt.wantInject)
			}
			if want := tt.wantInject + tt.wantLasts; healed < want || healed > want+slack {
				t.Errorf("healed %v after the wait returned, want %v (counted from the event, a second before the wait returned)", healed, want)
			}
		})
	}
}

// slowLab takes a while to find its targets, as the key's next holder is
// found only once it is granted.
type slowLab struct {
	fakeLab
	wait time.Duration
}

func (l slowLab) Resolve(ctx context.Context, sel Selector, rng *rand.Rand) ([]Target, error) {
	time.Sleep(l.wait)
	return l.fakeLab.Resolve(ctx, sel, rng)
}

// slowProc takes a while to pause, like a server that must stop every
// thread.
type slowProc struct{ fakeProc }

func (p *slowProc) Pause() error { time.Sleep(200 * time.Millisecond); return p.fakeProc.Pause() }

// holderLab resolves the holder only once ctx ends (nobody ever holds).
type holderLab struct{ fakeLab }

func (l holderLab) Resolve(ctx context.Context, sel Selector, rng *rand.Rand) ([]Target, error) {
	if sel.Client == ClientHolder {
		<-ctx.Done()
		return nil, ErrNoTarget
	}
	return l.fakeLab.Resolve(ctx, sel, rng)
}

// TestEngineOpened: Opened closes once the faults due at the start are in
// place (a runner starts its clients then), not before; a fault at the
// start on the lock's holder, which needs the clients going, does not hold
// it back; a plan with nothing at the start opens at once.
func TestEngineOpened(t *testing.T) {
	slow := &slowProc{}
	lab := holderLab{fakeLab{"slow": {Kind: TargetClient, Name: "client 1", Process: slow}}}
	for _, tc := range []struct {
		name     string
		steps    []Step
		min, max time.Duration
	}{
		{"a slow fault at the start", []Step{
			{Fault: &ClientPause{}, Target: client("slow")},
			{Fault: &ClientPause{}, Target: Selector{Client: ClientHolder, Key: "0"}},
		}, 200 * time.Millisecond, 2 * time.Second},
		{"nothing at the start", []Step{{Fault: &ClientPause{}, Target: client("slow"), At: ms(500)}}, 0, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			e := NewEngine(lab, &memRecorder{}, nil)
			stalls := stall.NewWatch(ctx)
			start := time.Now()
			go e.Run(ctx, start, plan(t, 3*time.Second, tc.steps...))
			select {
			case <-e.Opened():
			case <-ctx.Done():
				t.Fatal("never opened")
			}
			took := time.Since(start)
			if still := stalls.Within(start, start.Add(took)); took < tc.min || took > tc.max+still {
				t.Fatalf("opened after %v (%v of it standing still), want between %v and %v", took, still, tc.min, tc.max)
			}
			if tc.min > 0 && len(slow.got()) == 0 {
				t.Fatal("opened before the fault at the start was in place")
			}
			cancel()
			_ = e.HealAll(context.Background())
		})
	}
}

// An injection that fails on its own is a failure of the run though the
// case ended while it was under way (a user's fault command asked again
// until past the end); one cut short by the end is not.
func TestEngineInjectionFailingPastTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		failed bool
	}{
		{"failed on its own", errors.New("fault command pause of redis-0: exit status 1"), true},
		{"cut short by the end", fmt.Errorf("timed out: %w", context.Canceled), false},
		{"out of time", fmt.Errorf("timed out: %w", context.DeadlineExceeded), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			slow := fakeFault{healed: new([]string), inject: func(Target) error {
				cancel() // the case ends while the injection is under way
				return tc.err
			}}
			lab := fakeLab{"p": {Kind: TargetClient, Name: "client 1", Process: &fakeProc{}}}
			err := NewEngine(lab, &memRecorder{}, nil).Run(ctx, time.Now(), []Planned{{Fault: slow, Target: client("p")}})
			if failed := err != nil && strings.Contains(err.Error(), "exit status 1"); failed != tc.failed {
				t.Fatalf("Run error %v: a failure %v, want %v", err, failed, tc.failed)
			}
		})
	}
}

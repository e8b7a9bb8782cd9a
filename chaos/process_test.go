package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
)

// TestServerFaults: each server fault, through cluster.Node, on a real
// Redis: what a client sees during it, and that the heal brings the node
// back. Redis runs without persistence, so a kill loses the key.
func TestServerFaults(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	for _, tc := range []struct {
		fault     Fault
		minInject time.Duration // the injection itself takes this long
		answers   bool          // the server answers during the fault
		keyKept   bool          // a key set before survives
		instant   bool          // no heal
	}{
		{fault: &ServerPause{}, keyKept: true},
		{fault: &ServerKill{}},
		{fault: &ServerRestart{Delay: Duration(300 * time.Millisecond)}, minInject: 300 * time.Millisecond, answers: true, instant: true},
	} {
		t.Run(tc.fault.Kind(), func(t *testing.T) {
			key := randomKey("server")
			before := dialRedis(t, node.DirectAddr())
			before.must("SET", key, "v")
			target := NodeTarget(node)
			if err := tc.fault.Available(target); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			h, err := tc.fault.Inject(context.Background(), target)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < tc.minInject {
				t.Fatalf("injection took %v, want at least %v", took, tc.minInject)
			}
			if (h == nil) != tc.instant {
				t.Fatalf("heal is nil: %v, want %v", h == nil, tc.instant)
			}
			answered := pingDirect(node.DirectAddr()) == nil
			if answered != tc.answers {
				t.Fatalf("during %s the server answered: %v, want %v", tc.fault.Kind(), answered, tc.answers)
			}
			if h != nil {
				heal(t, h)
			}
			want := "$-1"
			if tc.keyKept {
				want = "v"
			}
			if r := dialRedis(t, node.DirectAddr()).must("GET", key); r != want {
				t.Fatalf("after the heal GET = %q, want %q", r, want)
			}
		})
	}
}

// pingDirect is one PING on a fresh connection that gives up after quiet.
func pingDirect(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, quiet)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(quiet))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// endsAtRestart is a node whose run ends as its start begins.
type endsAtRestart struct {
	Node
	end context.CancelFunc
}

func (n endsAtRestart) Restart(ctx context.Context) error {
	n.end()
	return n.Node.(Restarter).Restart(ctx)
}

// TestServerRestartOutlivesTheRun: a run that ends while a restarted
// server starts (its ctx done once the kill is made) still gets the
// server back, and the injection succeeds: a start cut short would leave
// the server dead and call the restart failed.
func TestServerRestartOutlivesTheRun(t *testing.T) {
	c := startCluster(t, cluster.LocalConfig{Nodes: map[impls.Server]int{impls.Redis: 1}})
	node := c.Nodes()[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	target := NodeTarget(node)
	target.Process = endsAtRestart{Node: node, end: cancel}
	if _, err := (&ServerRestart{}).Inject(ctx, target); err != nil {
		t.Fatalf("restart whose run ended during the start: %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the run's ctx did not end: the test tested nothing")
	}
	if err := pingDirect(node.DirectAddr()); err != nil {
		t.Fatalf("after the restart the server does not answer: %v", err)
	}
}

// TestServerFaultsUnavailable: an external server (no process) takes
// network faults but no server faults, and says why.
func TestServerFaultsUnavailable(t *testing.T) {
	external := Target{Kind: TargetNode, Name: "redis-0"}
	for _, f := range []Fault{&ServerPause{}, &ServerKill{}, &ServerRestart{}} {
		if err := f.Available(external); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s on an external node: %v, want ErrUnavailable", f.Kind(), err)
		}
	}
	client := Target{Kind: TargetClient, Name: "client 1", Process: &osProcess{}}
	if err := (&ServerPause{}).Available(client); !errors.Is(err, ErrUnavailable) {
		t.Errorf("server-pause on a client: %v", err)
	}
}

// osProcess is a worker-like OS process for client faults.
type osProcess struct {
	cmd    *exec.Cmd
	exited chan error
}

func startProcess(t *testing.T) *osProcess {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &osProcess{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return p
}

func (p *osProcess) Pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *osProcess) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }
func (p *osProcess) Kill() error   { return p.cmd.Process.Kill() }

// hangingProcess is a real process whose "work" can hang alone, as a
// fleet's worker does.
type hangingProcess struct {
	*osProcess
	hung bool
}

func (p *hangingProcess) Hang() error   { p.hung = true; return nil }
func (p *hangingProcess) Unhang() error { p.hung = false; return nil }

// TestClientProcessFaults: client-pause stops a real process until the heal;
// client-crash kills it, with nothing to heal; client-hang hangs its work
// and leaves the process running; a goroutine client (no Process) can take
// none of them.
func TestClientProcessFaults(t *testing.T) {
	t.Run("client-pause", func(t *testing.T) {
		p := startProcess(t)
		target := Target{Kind: TargetClient, Name: "client 1", Process: p}
		h := inject(t, &ClientPause{}, target)
		waitState(t, p.cmd.Process.Pid, "T")
		heal(t, h)
		waitState(t, p.cmd.Process.Pid, "S")
	})
	t.Run("client-crash", func(t *testing.T) {
		p := startProcess(t)
		target := Target{Kind: TargetClient, Name: "client 1", Process: p}
		h, err := (&ClientCrash{}).Inject(context.Background(), target)
		if err != nil || h != nil {
			t.Fatalf("crash: heal %v, err %v; want an instantaneous fault", h != nil, err)
		}
		select {
		case err := <-p.exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("exit: %v, want killed by SIGKILL", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("the process is still running")
		}
	})
	t.Run("client-hang", func(t *testing.T) {
		p := &hangingProcess{osProcess: startProcess(t)}
		target := Target{Kind: TargetClient, Name: "client 1", Process: p}
		h := inject(t, &ClientHang{}, target)
		if !p.hung {
			t.Fatal("the client's work was not hung")
		}
		// Its process goes on: not stopped, as a pause would.
		if got := procState(t, p.cmd.Process.Pid); got == "T" {
			t.Fatal("a hang stopped the whole process")
		}
		heal(t, h)
		if p.hung {
			t.Fatal("the heal did not let the client's work go on")
		}
		// A process that cannot stop its work alone cannot hang.
		bare := Target{Kind: TargetClient, Name: "client 2", Process: startProcess(t)}
		if err := (&ClientHang{}).Available(bare); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("client-hang on a process without Hang: %v, want ErrUnavailable", err)
		}
	})
	t.Run("goroutine client", func(t *testing.T) {
		target := Target{Kind: TargetClient, Name: "client 1", Clock: &clock.Skewable{}}
		for _, f := range []Fault{&ClientPause{}, &ClientCrash{}, &ClientHang{}} {
			if err := f.Available(target); !errors.Is(err, ErrUnavailable) {
				t.Errorf("%s on a goroutine client: %v, want ErrUnavailable", f.Kind(), err)
			}
		}
		if err := (&ClientClock{Offset: Duration(time.Second)}).Available(target); err != nil {
			t.Errorf("client-clock on a goroutine client: %v", err)
		}
	})
}

func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := procState(t, pid)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is in state %q, want %q", pid, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClientClock: a jump moves the clock at once and the heal takes it
// back; a drift moves it by rate per second until the heal; overlapping
// injections on one clock compose, each heal taking back its own share.
// A drift is applied on ticks, which a loaded machine delays: the clock
// never runs ahead of the rate's reach since injection, and it gets on.
func TestClientClock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []ClientClock
		jump   time.Duration
		rate   float64
	}{
		{"jump ahead", []ClientClock{{Offset: Duration(5 * time.Second)}}, 5 * time.Second, 0},
		{"jump back", []ClientClock{{Offset: Duration(-2 * time.Second)}}, -2 * time.Second, 0},
		{"drift", []ClientClock{{Rate: 0.5}}, 0, 0.5},
		{"jump and drift overlap", []ClientClock{{Offset: Duration(time.Second)}, {Rate: -0.5}}, time.Second, -0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock.Skewable{}
			clk.SetOffset(time.Hour) // an offset from before: heals must keep it
			target := Target{Kind: TargetClient, Name: "client 1", Clock: clk}
			var heals []Heal
			injected := time.Now()
			for _, f := range tc.faults {
				if err := f.Validate(); err != nil {
					t.Fatal(err)
				}
				heals = append(heals, inject(t, &f, target))
			}
			// The drift's share so far lies between none and the rate's
			// reach since injection, and comes to 100 ms of drifting.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				drift := clk.Offset() - time.Hour - tc.jump
				reach := time.Duration(tc.rate * float64(time.Since(injected)))
				if drift < min(0, reach) || drift > max(0, reach) {
					t.Fatalf("offset %v after %v: the drift's %v is past its rate's reach %v", clk.Offset()-time.Hour, time.Since(injected), drift, reach)
				}
				if tc.rate == 0 || abs(drift) >= time.Duration(abs(tc.rate)*float64(100*time.Millisecond)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the drift applied %v in 10 s at rate %v", drift, tc.rate)
				}
			}
			for _, h := range heals { // oldest first: not the reverse of injection
				heal(t, h)
			}
			if got := clk.Offset(); got != time.Hour {
				t.Fatalf("after the heals offset %v, want the hour it had", got)
			}
		})
	}
}

// Jumps injected and healed at the same moments, with a drift ticking
// through them, all count: the clock ends where it was, to the nanosecond
// (each move is one step on it, not a read and a write another can slip
// between).
func TestClientClockJumpsAtOnceLeaveNoRemainder(t *testing.T) {
	clk := &clock.Skewable{}
	clk.SetOffset(time.Hour)
	target := Target{Kind: TargetClient, Name: "client 1", Clock: clk}
	drift := inject(t, &ClientClock{Rate: 0.9}, target)
	for round := range 20 {
		heals, errs := make([]Heal, 16), make([]error, 16)
		var wg sync.WaitGroup
		at := make(chan struct{})
		for i := range heals {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-at
				heals[i], errs[i] = InjectAll(context.Background(), &ClientClock{Offset: Duration(time.Duration(i+1) * 1000003)}, []Target{target})
			}()
		}
		close(at)
		wg.Wait()
		time.Sleep(driftTick) // the drift ticks between jumps and heals too
		at = make(chan struct{})
		for i, h := range heals {
			wg.Add(1)
			go func() { defer wg.Done(); <-at; errs[i] = errors.Join(errs[i], h(context.Background())) }()
		}
		close(at)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	heal(t, drift)
	if got := clk.Offset(); got != time.Hour {
		t.Fatalf("after every jump and the drift were healed the offset is %v from where it was", got-time.Hour)
	}
}

func abs[T time.Duration | float64](x T) T {
	if x < 0 {
		return -x
	}
	return x
}

package adapter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locklab/locklab/clock"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
)

// Grace is how long past a request's timeout_ms locklab waits for its
// answer before it calls the adapter broken.
const Grace = 5 * time.Second

// closeWait is how long Close waits for an adapter to exit after `close`
// before it kills it.
const closeWait = 2 * time.Second

// defaultTimeout is a request's timeout_ms when its context has no
// deadline: a request is never left to wait for ever.
const defaultTimeout = 30 * time.Second

// stderrLines is how many of its last stderr lines an Error quotes.
const stderrLines = 3

// Locker is one client's adapter process: an impls.Locker whose every
// call is a request over the protocol, answered one at a time. It is also
// the client's process as faults see it (Pause, Resume, Kill).
type Locker struct {
	spec   *Spec
	client int
	clk    clock.Clock

	sp      *spawn.Spawner
	cmd     *exec.Cmd
	inMu    sync.Mutex
	stdin   io.WriteCloser
	stdoutR io.Reader
	stderr  tail
	log     *os.File
	logPath string

	// turn holds a token while a request is outstanding: one at a time,
	// also when a caller gave up waiting (its answer still comes first).
	turn  chan struct{}
	ready chan Message // the handshake's answer

	mu      sync.Mutex
	lastID  int64            // the last request id sent
	pending *call            // the request outstanding, if any
	leases  map[int64]*lease // granted and not released, by acquire id
	// released are the last leases released, whose watchdog's late
	// renewals are still told to their holder (a renewal sent after the
	// release returned is a bug the suite looks for).
	released [releasedKept]*lease
	nextGone int
	paused   bool          // stopped by Pause
	pausedT  time.Time     // when, if paused
	pauses   time.Duration // time spent paused before pausedT
	dead     chan struct{} // closed by end
	deadErr  error         // why: an *Error, ErrCrashed, or errClosed
	exited   chan struct{} // closed once the process was waited for
	killed   atomic.Bool   // by Kill: its exit is a crash, not a mistake
	closing  atomic.Bool   // by Close: its exit is expected
	started  atomic.Bool   // said ready
	// clockFile is the adapter's libfaketime offset file; "": its clock
	// is the machine's.
	clockFile string
	// heard is when the last request went out whose answer showed the
	// adapter's session alive (the client's clock, Unix ns; see
	// reachedServer and hear): for a session lock, its last heartbeat as
	// far as locklab can tell.
	heard atomic.Int64
}

// hear notes that a request sent at sent was answered with the session
// alive. The server heard the client no earlier than the request went out,
// and counts the session's timeout from then at the earliest: counted from
// the answer's arrival instead, a holder paused right after its grant was
// believed valid past its session's expiry by the answer's way back
// (curator-mutex under client-pause, two busy loops beside the suite: a
// both-valid double grant the lock never made).
func (l *Locker) hear(sent time.Time) {
	at := sent.UnixNano()
	for {
		old := l.heard.Load()
		if at <= old || l.heard.CompareAndSwap(old, at) {
			return
		}
	}
}

// call is one request on its way.
type call struct {
	req      Request
	sentAt   time.Time     // on the client's clock, for lease arithmetic
	deadline time.Time     // timeout_ms from when it was sent
	pausedAt time.Duration // the process's paused time when it was sent
	answer   chan Message  // the answer, from the reader
	msg      Message
	lease    *lease              // an acquire's lease, made when its ok was read
	onRenew  func(impls.Renewal) // an acquire's: told of its lease's renewals
	err      error
}

var errClosed = errors.New("adapter closed")

// Start starts spec's adapter for one client and returns once it said
// ready. Its errors are *Error (the adapter's fault) or ctx's.
func Start(ctx context.Context, spec *Spec, env impls.Env) (*Locker, error) {
	hello := helloFor(spec, env)
	clk := env.Clock
	if clk == nil {
		clk = &clock.Skewable{}
	}
	l := &Locker{spec: spec, client: env.ClientID, clk: clk, turn: make(chan struct{}, 1), ready: make(chan Message, 1),
		leases: map[int64]*lease{}, dead: make(chan struct{}), exited: make(chan struct{})}
	if env.LogDir != "" {
		dir := filepath.Join(env.LogDir, "adapters")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("adapter logs: %w", err)
		}
		l.logPath = filepath.Join(dir, fmt.Sprintf("%s-%d.log", spec.Name, env.ClientID))
		var err error
		if l.log, err = os.OpenFile(l.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("adapter log: %w", err)
		}
	}
	var clockEnv []string
	if env.ProcessClock {
		var err error
		if clockEnv, err = l.processClock(); err != nil {
			l.release()
			return nil, err
		}
	}
	if err := l.startProcess(clockEnv); err != nil {
		l.release()
		if l.clockFile != "" {
			os.RemoveAll(filepath.Dir(l.clockFile))
		}
		return nil, l.mistake(fmt.Sprintf("could not be started: %v", err))
	}
	if l.clockFile != "" {
		go l.followClock()
	}
	go l.read()
	if err := l.handshake(ctx, hello); err != nil {
		l.kill()
		<-l.exited
		l.release()
		return nil, err
	}
	return l, nil
}

func (l *Locker) startProcess(env []string) error {
	cmd := exec.Command(l.spec.Argv[0], l.spec.Argv[1:]...)
	cmd.Dir = l.spec.Dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr io.Writer = &l.stderr
	if l.log != nil {
		stderr = io.MultiWriter(l.log, &l.stderr)
	}
	cmd.Stderr = stderr
	// A child of the adapter that keeps its stderr open must not keep
	// Wait from returning.
	cmd.WaitDelay = time.Second
	var err error
	if l.stdin, err = cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	l.sp = spawn.New()
	if err := l.sp.Start(cmd); err != nil {
		return err
	}
	l.cmd = cmd
	l.stdoutR = stdout
	return nil
}

// helloFor is the handshake for one client: the servers of the kind the
// approach names (the proxies, as clients reach them), as many as its file
// asks for, with their logins and the Sentinels' routes, and the file's
// options.
func helloFor(spec *Spec, env impls.Env) Hello {
	servers := env.Endpoints[spec.Server].First(spec.Nodes)
	kind := string(spec.Server)
	h := Hello{Type: "hello", Protocol: Version, Approach: spec.Name, Client: env.ClientID,
		Servers: map[string][]string{kind: append([]string{}, servers.Addrs...)}, DSN: map[string]string{},
		Sentinel: servers.Sentinel, Options: spec.Options}
	if len(servers.DSNs) > 0 {
		h.DSN[kind], h.DSNs = servers.DSNs[0], map[string][]string{kind: servers.DSNs}
	}
	if h.Options == nil {
		h.Options = map[string]any{}
	}
	return h
}

// handshake sends hello and waits for ready, up to the start-timeout.
func (l *Locker) handshake(ctx context.Context, hello Hello) error {
	if b, err := encodeLine(hello); err == nil {
		_ = l.write(b) // an adapter gone already is told by the reader
	}
	t := time.NewTimer(l.spec.StartTimeout)
	defer t.Stop()
	select {
	case m := <-l.ready:
		if m.Type == TypeError {
			// Its words, whatever its exit (noticed first, maybe) says.
			return l.mistakeAfterExit(fmt.Sprintf("sent error instead of ready: %q", m.Reason))
		}
		l.started.Store(true)
		return nil
	case <-l.dead:
		// An adapter that sent error and exited: its words, read before
		// its exit was noticed, say more than the exit (both may be ready).
		select {
		case m := <-l.ready:
			if m.Type == TypeError {
				return l.mistakeAfterExit(fmt.Sprintf("sent error instead of ready: %q", m.Reason))
			}
		default:
		}
		return l.told()
	case <-t.C:
		l.fail(fmt.Sprintf("sent no ready within its start-timeout (%v)", l.spec.StartTimeout))
		return l.told()
	case <-ctx.Done():
		// The caller gave up first (the run ended, its connect deadline
		// passed while the server was down): not the adapter's mistake,
		// which only its own start-timeout says. The client is not
		// there, as an in-process client that could not connect.
		err := l.end(fmt.Errorf("adapter %s client %d: not ready when its caller gave up: %w: %w", l.spec.Name, l.client, impls.ErrUnavailable, ctx.Err()))
		l.kill()
		return err
	}
}

// read reads the adapter's lines until its stdout ends, then waits for
// it and tells why it is gone.
func (l *Locker) read() {
	sc := bufio.NewScanner(l.stdoutR)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	handshaken := false
	for sc.Scan() {
		if l.closing.Load() {
			continue // after close, whatever it says is moot
		}
		m, err := Parse(sc.Bytes())
		if err == nil {
			switch m.Type {
			case TypeReady, TypeError:
				if handshaken {
					err = fmt.Errorf("sent %q again after the handshake", m.Type)
					break
				}
				handshaken = true
				l.ready <- m
			case TypeOK, TypeFail, TypeInfo:
				err = l.answer(m)
			case TypeLost:
				l.lost(m.Lease)
			case TypeRenewing, TypeRenewed:
				err = l.renewal(m)
			}
		}
		if err != nil {
			l.fail(err.Error())
			break
		}
	}
	if err := sc.Err(); err != nil && l.deadError() == nil && !l.killed.Load() && !l.closing.Load() {
		if errors.Is(err, bufio.ErrTooLong) {
			l.fail(fmt.Sprintf("printed a line longer than %d bytes", MaxLine))
		} else {
			l.fail(fmt.Sprintf("its stdout failed: %v", err))
		}
	}
	// Drain what is left (after a mistake the process was killed), so
	// Wait is not held up by a full pipe.
	_, _ = io.Copy(io.Discard, l.stdoutR)
	waitErr := l.cmd.Wait()
	close(l.exited)
	status := "exit status 0"
	if waitErr != nil {
		status = waitErr.Error()
	}
	switch {
	case l.killed.Load():
		l.end(impls.ErrCrashed)
	case l.closing.Load():
		l.end(errClosed)
	case !handshaken:
		l.fail(fmt.Sprintf("exited before ready (%s)", status))
	default:
		l.mu.Lock()
		c := l.pending
		l.mu.Unlock()
		if c != nil {
			l.fail(fmt.Sprintf("exited (%s) while request %d (%s) was outstanding", status, c.req.ID, c.req.Op))
		} else {
			l.fail(fmt.Sprintf("exited (%s) between requests", status))
		}
	}
}

// answer hands an ok, fail or info to the request it answers.
func (l *Locker) answer(m Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.pending
	if c == nil || c.req.ID != m.ID {
		if m.ID >= 1 && m.ID <= l.lastID {
			return fmt.Errorf("answered request %d a second time (%s)", m.ID, m.Type)
		}
		return fmt.Errorf("answered id %d, which it was never sent (%s)", m.ID, m.Type)
	}
	l.pending = nil
	if reachedServer(m) {
		l.hear(c.sentAt)
	}
	if c.req.Op == OpAcquire && m.Type == TypeOK {
		// The lease exists from here: a lost event right after the ok
		// finds it.
		c.lease = &lease{l: l, id: c.req.ID, key: c.req.Key, token: m.Token, hasToken: m.HasToken, onRenew: c.onRenew}
		if l.spec.Caps.LossSignal {
			c.lease.lost = make(chan struct{})
		}
		l.leases[c.req.ID] = c.lease
	}
	c.answer <- m
	return nil
}

// lost delivers a lost event to its lease. One for a lease not held (just
// released, never granted) says nothing about a lease of ours: ignored.
func (l *Locker) lost(id int64) {
	l.mu.Lock()
	ls := l.leases[id]
	l.mu.Unlock()
	if ls != nil {
		ls.markLost()
	}
}

// releasedKept is how many released leases still hear their renewals.
const releasedKept = 16

// renewal tells a lease's holder of a renewal its library made on its
// own: `renewing` as it is sent, `renewed` once answered, one at a time.
// Those of a lease not held and not among the last released are ignored,
// as a `lost` is.
func (l *Locker) renewal(m Message) error {
	l.mu.Lock()
	ls := l.leases[m.Lease]
	for _, gone := range l.released {
		if ls == nil && gone != nil && gone.id == m.Lease {
			ls = gone
		}
	}
	l.mu.Unlock()
	if ls == nil {
		return nil
	}
	now := l.clk.Now()
	ls.mu.Lock()
	sent := ls.renewSent
	var r impls.Renewal
	switch {
	case m.Type == TypeRenewing && !sent.IsZero():
		ls.mu.Unlock()
		return fmt.Errorf("sent renewing for lease %d while its previous renewal was unanswered", m.Lease)
	case m.Type == TypeRenewing:
		ls.renewSent = now
	case sent.IsZero():
		ls.mu.Unlock()
		return fmt.Errorf("sent renewed for lease %d with no renewing before it", m.Lease)
	default:
		ls.renewSent = time.Time{}
		r.Done = true
		switch m.Error {
		case RenewNotHeld:
			r.Err = fmt.Errorf("renewal: %w: %s", impls.ErrNotHeld, m.Reason)
		case RenewUnknown:
			r.Err = fmt.Errorf("renewal: %w: %s", impls.ErrIndeterminate, m.Reason)
		default:
			// Counted from when the renewal was told sent: the belief errs short.
			if m.ValidMs >= 0 {
				ls.until = sent.Add(time.Duration(m.ValidMs * float64(time.Millisecond)))
			}
			l.hear(sent)
		}
	}
	onRenew := ls.onRenew
	ls.mu.Unlock()
	if r.Done && r.Err == nil {
		// A session heartbeat (no valid_ms) moves a session lock's belief
		// through hear: the holder is told the belief it now has.
		r.ValidUntil = ls.ValidUntil()
	}
	if onRenew != nil {
		onRenew(r)
	}
	return nil
}

// do sends one request and waits for its answer: until its context ends
// by cancellation (the answer still comes first for the next request),
// or up to timeout_ms plus the grace (else the adapter is broken).
func (l *Locker) do(ctx context.Context, req Request) (*call, error) { return l.send(ctx, req, nil) }

// send is do for an acquire whose lease's renewals go to onRenew.
func (l *Locker) send(ctx context.Context, req Request, onRenew func(impls.Renewal)) (*call, error) {
	if err := l.deadError(); err != nil {
		return nil, err
	}
	select {
	case l.turn <- struct{}{}:
	case <-l.dead:
		return nil, l.told()
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: the adapter's previous request is still unanswered (%v)", impls.ErrUnavailable, ctx.Err())
	}
	timeout := defaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), 0)
	}
	req.Type, req.TimeoutMs = "request", timeout.Milliseconds()
	c := &call{answer: make(chan Message, 1), onRenew: onRenew}
	l.mu.Lock()
	l.lastID++
	req.ID = l.lastID
	c.req, c.sentAt, c.deadline, c.pausedAt = req, l.clk.Now(), time.Now().Add(timeout), l.pausedLocked()
	l.pending = c
	l.mu.Unlock()
	_ = l.write(req.appendLine(nil)) // an adapter gone is told by the reader
	// The caller waits in its own goroutine: the reader's hand-off is the
	// only one between the adapter's line and the caller (a goroutine per
	// call cost a second wake-up per request, a third of the protocol's
	// overhead at one client).
	if l.await(ctx, c) {
		<-l.turn
		return c, c.err
	}
	go func() {
		l.await(context.Background(), c)
		<-l.turn
	}()
	return nil, fmt.Errorf("%w: stopped waiting for the adapter's answer to %s", impls.ErrIndeterminate, req.Op)
}

// await waits for c's answer and calls the adapter broken if none comes
// in time; time the process spent paused does not count (a stopped
// adapter cannot answer). It returns false, the answer still to come,
// when ctx is cancelled first; a deadline of ctx is not waited out
// early: the adapter answers by then, info if need be.
func (l *Locker) await(ctx context.Context, c *call) bool {
	t := time.NewTimer(max(time.Until(l.allowed(c)), 0))
	defer t.Stop()
	cancelled := ctx.Done()
	for {
		select {
		case m := <-c.answer:
			c.msg = m
			return true
		case <-l.dead:
			select {
			case m := <-c.answer:
				c.msg = m
			default:
				c.err = l.told()
			}
			return true
		case <-t.C:
			if d := time.Until(l.allowed(c)); d > 0 {
				t.Reset(d) // a pause moved the limit
				continue
			}
			l.fail(fmt.Sprintf("gave no answer to request %d (%s) within its timeout_ms (%d) plus %v",
				c.req.ID, c.req.Op, c.req.TimeoutMs, l.grace()))
			c.err = l.told()
			return true
		case <-cancelled:
			if errors.Is(ctx.Err(), context.Canceled) {
				return false
			}
			cancelled = nil
		}
	}
}

// allowed is when c's answer is overdue.
func (l *Locker) allowed(c *call) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused {
		return time.Now().Add(l.grace())
	}
	return c.deadline.Add(l.grace() + l.pausedLocked() - c.pausedAt)
}

func (l *Locker) grace() time.Duration {
	if l.spec.grace > 0 {
		return l.spec.grace
	}
	return Grace
}

// pausedLocked is the time the process spent stopped so far; l.mu held.
func (l *Locker) pausedLocked() time.Duration {
	if l.paused {
		return l.pauses + time.Since(l.pausedT)
	}
	return l.pauses
}

// write writes one line to the adapter.
func (l *Locker) write(line []byte) error {
	l.inMu.Lock()
	defer l.inMu.Unlock()
	_, err := l.stdin.Write(line)
	return err
}

// fail calls the adapter broken for what it did: the process is killed
// (nothing is left running) and every call from now on returns the error.
func (l *Locker) fail(did string) error {
	err := l.end(l.mistake(did))
	l.kill()
	return err
}

// mistakeAfterExit is the error of an adapter already gone, naming what
// it did before it went.
func (l *Locker) mistakeAfterExit(did string) error {
	err := l.mistake(did)
	l.end(err)
	l.kill()
	l.told()
	return err
}

func (l *Locker) mistake(did string) *Error {
	return &Error{Approach: l.spec.Name, Client: l.client, Did: did, Stderr: l.stderr.lines(stderrLines), Log: l.logPath, stderr: &l.stderr}
}

// end records why the adapter is gone, once; it returns the first reason.
func (l *Locker) end(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deadErr == nil {
		l.deadErr = err
		close(l.dead)
	}
	return l.deadErr
}

func (l *Locker) deadError() error {
	select {
	case <-l.dead:
		return l.told()
	default:
		return nil
	}
}

// told is the reason the adapter is gone, for a caller: once the process
// was waited for (within exitSettle), so that the stderr the error quotes
// was read to its end (the broken adapter was killed: it exits at once).
func (l *Locker) told() error {
	t := time.NewTimer(exitSettle)
	defer t.Stop()
	select {
	case <-l.exited:
	case <-t.C:
	}
	return l.deadErr
}

// exitSettle bounds told's wait for a killed adapter's exit.
const exitSettle = time.Second

// Processes are the adapter's process and those it started (a script's
// JVM), while it runs: what the lab watches for waits for a CPU, as it
// watches the servers it runs.
func (l *Locker) Processes() []int {
	if l.cmd == nil || l.cmd.Process == nil {
		return nil
	}
	pid := l.cmd.Process.Pid
	return append([]int{pid}, spawn.Descendants(pid)...)
}

// signal sends sig to the adapter's process group: an adapter that is a
// script starting the real program (a JVM) is stopped or killed whole.
func (l *Locker) signal(sig syscall.Signal) error {
	if l.cmd == nil || l.cmd.Process == nil {
		return errors.New("no process")
	}
	return syscall.Kill(-l.cmd.Process.Pid, sig)
}

func (l *Locker) kill() { _ = l.signal(syscall.SIGKILL) }

// release frees what Start took, once the process is gone: any process
// left in its group is killed, the spawning thread ends, the log closes.
func (l *Locker) release() {
	if l.cmd != nil {
		l.kill()
	}
	if l.sp != nil {
		l.sp.Close()
	}
	if l.log != nil {
		_ = l.log.Close()
	}
}

// Acquire asks the adapter for the lock on key.
func (l *Locker) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	if len(key) == 0 || len(key) > MaxKey {
		return nil, fmt.Errorf("%w: a lock key is 1..%d bytes (docs/protocol.md), got %d", impls.ErrInvalidKey, MaxKey, len(key))
	}
	c, err := l.send(ctx, Request{Op: OpAcquire, Key: key, TTLMs: opt.TTL.Milliseconds(), Wait: !opt.Try}, opt.OnRenew)
	if err != nil {
		return nil, err
	}
	if c.msg.Type != TypeOK {
		err := outcome(c.msg)
		// Whole milliseconds of timeout_ms end up to one before the
		// caller's deadline.
		atDeadline := !time.Now().Before(c.deadline.Add(-time.Millisecond))
		waitedOut := c.msg.Type == TypeFail && c.msg.Error == FailNotAcquired ||
			// An acquire left unknown once its wait ran out (kazoo's worker
			// still inside the lock call).
			c.msg.Type == TypeInfo && atDeadline
		switch {
		case !opt.Try && c.msg.Type == TypeFail && c.msg.Error == FailUnavailable && atDeadline:
			// Nothing deciding was sent before the wait ran out: not
			// acquired by the caller's deadline, as an in-process waiter
			// whose context ends before its deciding call.
			err = fmt.Errorf("%w: gave up waiting (%s): %w", impls.ErrNotAcquired, c.msg.Reason, context.DeadlineExceeded)
		case !opt.Try && waitedOut:
			// A waiting acquire that did not get the lock waited out its
			// timeout_ms, which is the caller's deadline: it gave up as
			// an in-process waiter does when its context ends.
			err = fmt.Errorf("%w: %w", err, context.DeadlineExceeded)
		}
		return nil, err
	}
	c.lease.setValid(c.sentAt, c.msg.ValidMs, opt.TTL)
	return c.lease, nil
}

// Close tells the adapter to stop (dropping its connections without
// releasing, as a crashed holder would), waits briefly, then kills it.
func (l *Locker) Close() error {
	if !l.closing.CompareAndSwap(false, true) {
		return nil
	}
	if l.deadError() == nil {
		_ = l.Resume() // a stopped adapter cannot exit
		l.mu.Lock()
		l.lastID++
		id := l.lastID
		l.mu.Unlock()
		_ = l.write(Request{Type: "request", ID: id, Op: OpClose}.appendLine(nil))
		l.inMu.Lock()
		_ = l.stdin.Close()
		l.inMu.Unlock()
		select {
		case <-l.exited:
		case <-time.After(closeWait):
			l.kill()
		}
	} else {
		l.kill()
	}
	<-l.exited
	l.release()
	return nil
}

// Pause stops the adapter's process group (SIGSTOP): its heartbeats and
// renewals stop with it. The wait for an answer does not count the time
// it stays stopped.
func (l *Locker) Pause() error {
	l.mu.Lock()
	if !l.paused {
		l.paused, l.pausedT = true, time.Now()
	}
	l.mu.Unlock()
	return l.signal(syscall.SIGSTOP)
}

// Resume continues it (SIGCONT).
func (l *Locker) Resume() error {
	err := l.signal(syscall.SIGCONT)
	l.mu.Lock()
	if l.paused {
		l.pauses += time.Since(l.pausedT)
		l.paused = false
	}
	l.mu.Unlock()
	return err
}

// Kill kills the adapter's process group (SIGKILL) and returns once it is
// gone: a client crash. Calls in flight and from now on return
// impls.ErrCrashed.
func (l *Locker) Kill() error {
	l.killed.Store(true)
	if err := l.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill adapter %s client %d: %w", l.spec.Name, l.client, err)
	}
	select {
	case <-l.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill adapter %s client %d: still running after 10s", l.spec.Name, l.client)
	}
}

// outcome is the impls error a fail or info answer stands for.
func outcome(m Message) error {
	if m.Type == TypeInfo {
		return fmt.Errorf("%w: %s", impls.ErrIndeterminate, m.Reason)
	}
	sentinel := map[string]error{FailNotAcquired: impls.ErrNotAcquired, FailNotHeld: impls.ErrNotHeld,
		FailUnavailable: impls.ErrUnavailable, FailUnsupported: impls.ErrUnsupported, FailInvalidKey: impls.ErrInvalidKey}[m.Error]
	return fmt.Errorf("%w: %s", sentinel, m.Reason)
}

// lease is a lock the adapter granted, named by its acquire's id.
type lease struct {
	l        *Locker
	id       int64
	key      string
	token    uint64
	hasToken bool
	lost     chan struct{} // nil unless the approach has a loss signal
	lostOnce sync.Once
	onRenew  func(impls.Renewal) // the acquire's, or nil
	mu       sync.Mutex
	until    time.Time
	// renewSent is when the outstanding renewal was told sent; zero: none.
	renewSent time.Time
}

func (ls *lease) Key() string           { return ls.key }
func (ls *lease) Token() (uint64, bool) { return ls.token, ls.hasToken }
func (ls *lease) Lost() <-chan struct{} { return ls.lost }

// reachedServer says whether an answer shows the adapter's session with
// its server alive: a request done, or refused by the server. A `lost`,
// an `info` or an `unavailable` says the opposite or nothing.
func reachedServer(m Message) bool {
	return m.Type == TypeOK || (m.Type == TypeFail && (m.Error == FailNotAcquired || m.Error == FailNotHeld))
}

// ValidUntil is the holder's belief about its expiry: valid_ms or the TTL
// from the acquire; for a session lock (no TTL, a crashed holder's lock
// freed after crash-freed-after: a ZooKeeper session), the sending of the
// last request that showed its session alive plus that timeout, as the
// built-in session locks count from the last heartbeat acknowledged. A holder that was stopped
// (a pause) believes in a session that may have expired meanwhile.
func (ls *lease) ValidUntil() time.Time {
	ls.mu.Lock()
	until := ls.until
	ls.mu.Unlock()
	spec := ls.l.spec
	if until.IsZero() && !spec.Caps.TTL && spec.CrashFreedAfter > 0 {
		if heard := ls.l.heard.Load(); heard != 0 {
			return time.Unix(0, heard).Add(spec.CrashFreedAfter)
		}
	}
	return until
}

// setValid sets the expiry from when the request was sent: valid_ms if
// the adapter said, else the TTL asked for where the approach has expiry.
func (ls *lease) setValid(sentAt time.Time, validMs float64, ttl time.Duration) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	switch {
	case validMs >= 0:
		ls.until = sentAt.Add(time.Duration(validMs * float64(time.Millisecond)))
	case ls.l.spec.Caps.TTL && ttl > 0:
		ls.until = sentAt.Add(ttl)
	}
}

func (ls *lease) markLost() {
	if ls.lost != nil {
		ls.lostOnce.Do(func() { close(ls.lost) })
	}
}

func (ls *lease) forget() {
	l := ls.l
	l.mu.Lock()
	delete(l.leases, ls.id)
	l.released[l.nextGone] = ls
	l.nextGone = (l.nextGone + 1) % releasedKept
	l.mu.Unlock()
}

func (ls *lease) Release(ctx context.Context) error {
	c, err := ls.l.do(ctx, Request{Op: OpRelease, Lease: ls.id})
	if err != nil {
		return err
	}
	if c.msg.Type == TypeOK {
		ls.forget()
		return nil
	}
	if c.msg.Type == TypeFail && c.msg.Error == FailNotHeld {
		ls.forget()
	}
	return outcome(c.msg)
}

func (ls *lease) Extend(ctx context.Context, ttl time.Duration) error {
	c, err := ls.l.do(ctx, Request{Op: OpExtend, Lease: ls.id, TTLMs: ttl.Milliseconds()})
	if err != nil {
		return err
	}
	if c.msg.Type != TypeOK {
		return outcome(c.msg)
	}
	ls.setValid(c.sentAt, c.msg.ValidMs, ttl)
	return nil
}

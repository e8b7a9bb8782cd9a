package adapter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
)

// badSpec is an approach whose adapter is testdata/bad_adapter.py in mode.
// Its start-timeout is a second where the mode hangs in the handshake (the
// mistake shown), else ten: a Python interpreter under two busy loops
// took over a second to say ready.
func badSpec(t *testing.T, mode string) *Spec {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	start := 10 * time.Second
	if mode == "hang-in-handshake" {
		start = time.Second
	}
	return &Spec{Name: "bad-" + mode, Argv: []string{"/usr/bin/python3", "bad_adapter.py", mode}, Dir: dir,
		Server: impls.Redis, StartTimeout: start, grace: 300 * time.Millisecond}
}

// TestBadAdapters runs an adapter that breaks the protocol in each way
// docs/protocol.md lists: each must end in an *Error of one line naming
// the adapter, the client, what it did and its last stderr line, with
// nothing left running.
func TestBadAdapters(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		atStart bool   // the mistake shows in the handshake
		did     string // what the error must say it did
	}{
		{mode: "exit-at-start", atStart: true, did: "exited before ready (exit status 1)"},
		{mode: "error", atStart: true, did: `sent error instead of ready: "cannot reach the servers"`},
		{mode: "hang-in-handshake", atStart: true, did: "sent no ready within its start-timeout (1s)"},
		{mode: "protocol-2", atStart: true, did: "protocol 2 (locklab speaks 1)"},
		{mode: "not-json", did: `printed a line that is not a JSON object: "Traceback? no: just words"`},
		{mode: "not-object", did: "printed a line that is not a JSON object"},
		{mode: "unknown-type", did: `type locklab does not know ("granted")`},
		{mode: "ready-twice", did: `sent "ready" again after the handshake`},
		{mode: "unknown-id", did: "answered id 101, which it was never sent"},
		{mode: "answer-twice", did: "answered request 1 a second time"},
		{mode: "never-answer", did: "gave no answer to request 1 (acquire) within its timeout_ms"},
		{mode: "bad-token", did: "token -3 is not a non-negative integer"},
		{mode: "bad-error-code", did: `error "busy", not one of`},
		{mode: "exit-mid-request", did: "exited (exit status 3) while request 1 (acquire) was outstanding"},
		{mode: "long-line", did: "printed a line longer than"},
		{mode: "renewed-unasked", did: "sent renewed for lease 1 with no renewing before it"},
		{mode: "renewing-twice", did: "sent renewing for lease 1 while its previous renewal was unanswered"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			t.Setenv("BAD_ADAPTER_PIDFILE", pidfile)
			spec := badSpec(t, tc.mode)
			logs := t.TempDir()
			env := impls.Env{ClientID: 7, LogDir: logs}
			l, err := Start(context.Background(), spec, env)
			if !tc.atStart {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				defer l.Close()
				// The answer to the second acquire, on a broken adapter,
				// is the same error: no request goes out.
				if answerTwice := tc.mode == "answer-twice"; answerTwice {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, err = l.Acquire(ctx, "k", impls.AcquireOptions{Try: true})
					cancel()
					if err != nil {
						t.Fatalf("first acquire: %v", err)
					}
				}
				// Only an adapter that never answers should meet the
				// request's timeout; the others' mistakes come when they
				// answer, which a loaded machine may delay past it (a
				// Python adapter printed its over-long line after more
				// than 600 ms beside two busy loops).
				wait := 10 * time.Second
				if tc.mode == "never-answer" {
					wait = 300 * time.Millisecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				_, err = l.Acquire(ctx, "k", impls.AcquireOptions{Try: true})
				cancel()
				if err == nil && (tc.mode == "answer-twice" || strings.HasPrefix(tc.mode, "renew")) {
					// The mistake after the answer may come in after the
					// call returned: the next call finds the adapter broken.
					_, err = l.Acquire(context.Background(), "k", impls.AcquireOptions{Try: true})
				}
			}
			checkBroken(t, err, spec.Name, tc.did, "bad adapter starting in mode "+tc.mode)
			if l != nil {
				if _, again := l.Acquire(context.Background(), "k", impls.AcquireOptions{}); !errors.Is(again, ErrBroken) {
					t.Errorf("a call after the mistake: %v, want the adapter still broken", again)
				}
				l.Close()
			}
			checkGone(t, pidfile)
			if b, err := os.ReadFile(filepath.Join(logs, "adapters", spec.Name+"-7.log")); err != nil || !strings.Contains(string(b), "mode "+tc.mode) {
				t.Errorf("stderr log: %q, %v: want the adapter's stderr", b, err)
			}
		})
	}
}

// A waiting acquire the adapter left unknown, or answered "unavailable"
// (nothing deciding sent: py-etcd3-lock's lease grant unanswered in a
// 200 ms wait beside two busy loops), once its wait ran out gave up at the
// caller's deadline, as an in-process waiter does: indeterminate, or not
// acquired, and the context's deadline. Either answer before the deadline
// is only what it says.
func TestAnswersAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		want     error
		deadline bool
	}{
		{"info-at-timeout", impls.ErrIndeterminate, true},
		{"info-at-once", impls.ErrIndeterminate, false},
		{"unavailable-at-timeout", impls.ErrNotAcquired, true},
		{"unavailable-at-once", impls.ErrUnavailable, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			l, err := Start(context.Background(), badSpec(t, tc.mode), impls.Env{ClientID: 1, LogDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err = l.Acquire(ctx, "k", impls.AcquireOptions{})
			if !errors.Is(err, tc.want) || errors.Is(err, context.DeadlineExceeded) != tc.deadline {
				t.Fatalf("err = %v; want %v, wrapping the deadline %v", err, tc.want, tc.deadline)
			}
		})
	}
}

// A session lock's holder is believed valid for its session timeout from
// when its grant's request went out, not from when the answer came back:
// the server counts the session from having heard the request, no later.
func TestSessionBeliefCountsFromTheRequest(t *testing.T) {
	l := startSession(t, "slow-grant")
	sent := time.Now()
	lease, err := l.Acquire(context.Background(), "k", impls.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	// Half the answer's 400 ms way back apart: from the request, not the
	// answer.
	if vu := lease.ValidUntil(); vu.Before(sent.Add(sessionTimeout)) || !vu.Before(sent.Add(sessionTimeout+200*time.Millisecond)) {
		t.Fatalf("believed valid until %v after the request, want from the request (%v) and not from the answer (%v later)",
			vu.Sub(sent), sessionTimeout, answered.Sub(sent))
	}
}

// A session lock's heartbeat (renewing, then renewed with no valid_ms)
// moves its holder's belief to the session timeout from the heartbeat's
// renewing, and the holder is told that belief with the renewal.
func TestSessionHeartbeatMovesTheBelief(t *testing.T) {
	l := startSession(t, "session-heartbeat")
	renewed := make(chan impls.Renewal, 2)
	var renewing time.Time
	lease, err := l.Acquire(context.Background(), "k", impls.AcquireOptions{OnRenew: func(r impls.Renewal) {
		if !r.Done {
			renewing = time.Now()
			return
		}
		renewed <- r
	}})
	if err != nil {
		t.Fatal(err)
	}
	granted := lease.ValidUntil()
	var r impls.Renewal
	select {
	case r = <-renewed:
	case <-time.After(5 * time.Second):
		t.Fatal("no renewed told in 5 s")
	}
	if r.Err != nil {
		t.Fatalf("renewal err = %v, want none", r.Err)
	}
	// From the renewing's arrival (300 ms after the grant), not the
	// acquire's: the belief moved on, and the holder was told it.
	if want := renewing.Add(sessionTimeout); r.ValidUntil.After(want) || r.ValidUntil.Before(want.Add(-50*time.Millisecond)) {
		t.Errorf("renewal told valid until %v, want the renewing's arrival plus the session timeout (%v)", r.ValidUntil, want)
	}
	if !r.ValidUntil.After(granted.Add(250*time.Millisecond)) || !lease.ValidUntil().Equal(r.ValidUntil) {
		t.Errorf("belief at the grant %v, told %v, now %v: want it moved on by the heartbeat and kept", granted, r.ValidUntil, lease.ValidUntil())
	}
}

// sessionTimeout is startSession's crash-freed-after.
const sessionTimeout = 2 * time.Second

// startSession starts the bad adapter in mode as a session lock (no TTL,
// a crashed holder's lock freed after sessionTimeout).
func startSession(t *testing.T, mode string) *Locker {
	t.Helper()
	spec := badSpec(t, mode)
	spec.CrashFreedAfter = sessionTimeout
	l, err := Start(context.Background(), spec, impls.Env{ClientID: 1, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestMissingCommand(t *testing.T) {
	spec := badSpec(t, "ok")
	spec.Argv = []string{"./no-such-adapter"}
	_, err := Start(context.Background(), spec, impls.Env{ClientID: 2})
	checkBroken(t, err, spec.Name, "could not be started", "")
	if !strings.Contains(err.Error(), "no-such-adapter") {
		t.Errorf("error %q does not name the command", err)
	}
}

// checkBroken checks err is the one-line adapter error saying did.
func checkBroken(t *testing.T, err error, name, did, stderr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want the adapter named broken: %s", did)
	}
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrBroken) || !errors.Is(err, impls.ErrBrokenClient) {
		t.Fatalf("error %v (%T): want an *adapter.Error wrapping ErrBroken", err, err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"adapter " + name, "client ", did, stderr} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q: want it to say %q", msg, want)
		}
	}
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("error of more than one line: %q", msg)
	}
}

// checkGone checks the adapter whose pid is in pidfile is not running.
func checkGone(t *testing.T, pidfile string) {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return // it never ran
	}
	pid, _ := strconv.Atoi(string(b))
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("adapter process %d still there (kill 0: %v)", pid, err)
	}
}

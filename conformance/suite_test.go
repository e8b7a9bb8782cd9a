package conformance

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/locklab/locklab/impls"
)

// scriptedLease answers Release with its errors in turn, then the last one
// for ever.
type scriptedLease struct {
	impls.Lease
	answers []error
	calls   int
}

func (l *scriptedLease) Release(context.Context) error {
	err := l.answers[min(l.calls, len(l.answers)-1)]
	l.calls++
	return err
}

func TestReleaseSettled(t *testing.T) {
	lost := errors.New("zk: connection closed")
	indeterminate := errors.Join(impls.ErrIndeterminate, lost)
	tests := []struct {
		name    string
		answers []error
		want    error // nil, or what the result must wrap
		calls   int
	}{
		{"released at once", []error{nil}, nil, 1},
		{"not held at once stays not held", []error{impls.ErrNotHeld}, impls.ErrNotHeld, 1},
		{"retried after it could not reach the server", []error{impls.ErrUnavailable, nil}, nil, 2},
		{"not held after an unreachable try: the lock went meanwhile", []error{impls.ErrUnavailable, impls.ErrNotHeld}, nil, 2},
		{"unreachable until the deadline", []error{impls.ErrUnavailable}, impls.ErrUnavailable, -1},
		{"retried until released", []error{indeterminate, indeterminate, nil}, nil, 3},
		{"not held after an indeterminate try: that try took", []error{indeterminate, impls.ErrNotHeld}, nil, 2},
		{"indeterminate until the deadline", []error{indeterminate}, impls.ErrIndeterminate, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only the case about the deadline meets it; the others settle
			// within their retries however slow the machine.
			deadline := time.Minute
			if tt.calls < 0 {
				deadline = 350 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			l := &scriptedLease{answers: tt.answers}
			err := releaseSettled(ctx, l)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.calls >= 0 && l.calls != tt.calls {
				t.Fatalf("%d releases tried, want %d", l.calls, tt.calls)
			}
			if tt.calls < 0 && l.calls < 2 {
				t.Fatalf("%d releases tried before the deadline, want retries", l.calls)
			}
		})
	}
}

// lossLease is a scriptedLease whose loss signal may have fired.
type lossLease struct {
	scriptedLease
	lost chan struct{}
}

func (l *lossLease) Lost() <-chan struct{} { return l.lost }
func (l *lossLease) Key() string           { return "k" }

// failT records whether a test failed; Fatalf ends its goroutine.
type failT struct {
	T
	failed bool
}

func (f *failT) Helper()               {}
func (f *failT) Logf(string, ...any)   {}
func (f *failT) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }

// A release answered "not held" fails the test unless the lock had told
// its holder it was gone.
func TestReleaseNotHeldAfterALossSignal(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name   string
		lost   chan struct{}
		answer error
		fails  bool
	}{
		{"released", nil, nil, false},
		{"not held, no loss signal", nil, impls.ErrNotHeld, true},
		{"not held, the signal not fired", make(chan struct{}), impls.ErrNotHeld, true},
		{"not held after the loss signal", closed, impls.ErrNotHeld, false},
		{"another error after the loss signal", closed, impls.ErrUnsupported, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &failT{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				release(ft, &lossLease{scriptedLease: scriptedLease{answers: []error{tc.answer}}, lost: tc.lost})
			}()
			<-done
			if ft.failed != tc.fails {
				t.Errorf("failed %v, want %v", ft.failed, tc.fails)
			}
		})
	}
}

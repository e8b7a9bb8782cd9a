package conformance

import (
	"context"
	"errors"
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

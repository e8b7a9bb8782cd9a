package fleet

import (
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locklab/locklab/internal/procstat"
)

// watchedPipe is a worker's stdout as the fleet reads it, watched so a
// pause can wait until what the worker wrote before it stopped has been
// handled: a store call sent just before the SIGSTOP, read by a starved
// locklab 50 ms later, is the holder's write landing after its pause
// began (seen: a client-pause run of zk-ephemeral whose pause checked the
// holder had not written, 4 ms before its write was served, and that then
// showed no lost update).
type watchedPipe struct {
	f *os.File
	// reading: the reader is in a Read, so every line it read before has
	// been handled (the fleet handles a line before it reads the next).
	reading atomic.Bool
	got     atomic.Int64 // bytes read so far
}

func (w *watchedPipe) Read(b []byte) (int, error) {
	w.reading.Store(true)
	n, err := w.f.Read(b)
	w.got.Add(int64(n))
	w.reading.Store(false)
	return n, err
}

// unread is how many bytes wait in the pipe, not yet read (FIONREAD,
// which Linux names TIOCINQ).
func (w *watchedPipe) unread() (int, error) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		return 0, err
	}
	return n, ierr
}

// idle reports whether the reader waits for more with nothing left
// unread; got is the bytes read when it last looked.
func (w *watchedPipe) idle() (got int64, ok bool) {
	got = w.got.Load()
	if !w.reading.Load() {
		return got, false
	}
	n, err := w.unread()
	return got, err == nil && n == 0
}

// drainChecks is how many looks in a row, drainEvery apart, must find the
// reader idle with nothing read in between: a Read that has taken bytes
// from the pipe but not yet returned looks idle once, not for long.
const (
	drainChecks = 3
	drainEvery  = 2 * time.Millisecond
)

// stoppedAndDrained waits until p is stopped (its state in /proc is T)
// and everything it wrote before has been read and handled: the history
// then holds what p did before it stopped. It gives up after within (the
// pause stands either way), and says whether it saw that.
func (p *clientProcess) stoppedAndDrained(within time.Duration) bool {
	w, ok := p.stdout.(*watchedPipe)
	if !ok {
		return false
	}
	deadline := time.Now().Add(within)
	run, last := 0, int64(-1)
	for time.Now().Before(deadline) {
		got, idle := w.idle()
		switch {
		case !idle || !stopped(p.cmd.Process.Pid):
			run = 0
		case run == 0 || got == last:
			run++
		default:
			run = 1
		}
		last = got
		if run >= drainChecks {
			return true
		}
		time.Sleep(drainEvery)
	}
	return false
}

// stopped reports whether process pid is stopped by a signal.
func stopped(pid int) bool {
	st, err := procstat.Read(pid)
	return err == nil && st.Stopped()
}

var _ io.Reader = (*watchedPipe)(nil)

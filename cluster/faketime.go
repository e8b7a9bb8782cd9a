package cluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/internal/faketime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Server clock jumps. A node started under libfaketime (LocalConfig.FakeTime)
// reads its wall clock as the real one plus an offset kept in a file of its
// own (FAKETIME_TIMESTAMP_FILE), re-read at every clock call
// (FAKETIME_NO_CACHE=1): writing the file jumps that server's clock at once
// and no other process's. The monotonic clock is left alone
// (FAKETIME_DONT_FAKE_MONOTONIC=1, FAKETIME_FORCE_MONOTONIC_FIX=0), as an
// NTP step leaves it alone on a real machine; the JVM also needs that to
// run at all, and to run without burning CPU.
//
// Which servers can take it:
//   - Redis: yes, with tcmalloc preloaded before libfaketime (Debian's
//     redis-server links jemalloc, which clashes with libfaketime: without
//     tcmalloc it never starts). Key expiry uses the wall clock, so a jump
//     forward expires keys early.
//   - ZooKeeper (Java) and MariaDB: yes.
//   - etcd: no. It is a Go program; Go reads the clock through the vDSO,
//     never through libc, so libfaketime cannot move it.
//   - PostgreSQL: not started under it (no lock approach here reads its
//     clock).

const (
	// fakeTimeFile is the offset file's name in the node's directory.
	fakeTimeFile   = "faketime.rc"
	fakeTimeEnvKey = faketime.FileVar + "="
)

// fakeTimeEnv writes a zero offset into dir's offset file and returns the
// environment that starts a server under libfaketime reading it.
// withTCMalloc preloads tcmalloc first (for jemalloc-linked Redis).
func fakeTimeEnv(dir string, withTCMalloc bool) ([]string, error) {
	if err := faketime.Installed(withTCMalloc); err != nil {
		return nil, fmt.Errorf("server %w", err)
	}
	file := filepath.Join(dir, fakeTimeFile)
	if err := writeOffset(file, 0); err != nil {
		return nil, err
	}
	return fakeTimeVars(file, withTCMalloc), nil
}

// preloads are the libraries a server under libfaketime preloads, in order.
func preloads(withTCMalloc bool) []string { return faketime.Preloads(withTCMalloc) }

// fakeTimeVars is the environment that puts a server under libfaketime
// reading its offset from file (a path as the server sees it): Redis
// re-reads it at every clock call, a JVM once a second.
func fakeTimeVars(file string, withTCMalloc bool) []string {
	return faketime.Vars(file, withTCMalloc, withTCMalloc)
}

func writeOffset(file string, d time.Duration) error { return faketime.Write(file, d) }

// ErrNoFakeTime: the node's clock cannot be moved.
var ErrNoFakeTime = errors.New("server clock cannot be moved")

// offsetFile is the node's offset file, or why it has none.
func (n *Node) offsetFile() (string, error) {
	if n.proc == nil && n.ctr == nil {
		return "", fmt.Errorf("%s: locklab does not run this server, and the cluster config gives it no clock fault command: %w", n.Name, ErrNoFakeTime)
	}
	if n.ctr != nil && n.ctr.clockFile != "" {
		return n.ctr.clockFile, nil
	}
	if n.proc != nil {
		for _, kv := range n.proc.env {
			if f, ok := strings.CutPrefix(kv, fakeTimeEnvKey); ok {
				return f, nil
			}
		}
	}
	if why := kindOfNode(n).NoFakeTime; why != "" {
		return "", fmt.Errorf("%s: %s: %w", n.Name, why, ErrNoFakeTime)
	}
	if n.ctr != nil {
		return "", fmt.Errorf("%s: its container does not run under libfaketime (only the servers of a plan with a server-clock fault do): %w", n.Name, ErrNoFakeTime)
	}
	return "", fmt.Errorf("%s: not started under libfaketime (LocalConfig.FakeTime; a plan with a server-clock fault sets it): %w", n.Name, ErrNoFakeTime)
}

// CanSetClock reports why SetClockOffset cannot work on n, or nil.
func (n *Node) CanSetClock() error {
	if n.cmds != nil {
		if err := n.cmds.can(OpClock); err != nil {
			return fmt.Errorf("%w: %w", err, ErrNoFakeTime)
		}
		return nil
	}
	if n.ctr != nil && n.ctr.clockInside {
		return nil
	}
	_, err := n.offsetFile()
	return err
}

// SetClockOffset sets the server's wall clock to the real time plus d, at
// once (a jump, both ways). It keeps its data; on Redis keys whose expiry
// time the jump passes expire at once. The offset survives a restart of the
// node. A user's server has its clock moved by its clock fault command.
func (n *Node) SetClockOffset(d time.Duration) error {
	if n.cmds != nil {
		return n.cmds.setClock(context.Background(), d)
	}
	if n.ctr != nil && n.ctr.clockInside {
		return n.ctr.setClock(d)
	}
	f, err := n.offsetFile()
	if err != nil {
		return err
	}
	return writeOffset(f, d)
}

// ClockOffset is the node's current clock offset.
func (n *Node) ClockOffset() (time.Duration, error) {
	if err := n.CanSetClock(); err != nil {
		return 0, err
	}
	if n.cmds != nil {
		return n.cmds.offset.get(), nil
	}
	if n.ctr != nil && n.ctr.clockInside {
		return n.ctr.offset.get(), nil
	}
	f, err := n.offsetFile()
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return 0, fmt.Errorf("clock offset of %s: %w", n.Name, err)
	}
	d, err := faketime.Parse(string(b))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", n.Name, err)
	}
	return d, nil
}

// ShiftClock moves the server's wall clock by d from where it stands, as
// one step: two faults on one node that jump or heal at the same moment
// (two steps due at one time fire side by side) both count, where two
// read-modify-writes of the offset could lose one and leave the server's
// clock off for the rest of its life.
func (n *Node) ShiftClock(d time.Duration) error {
	n.clockMu.Lock()
	defer n.clockMu.Unlock()
	cur, err := n.ClockOffset()
	if err != nil {
		return err
	}
	return n.SetClockOffset(cur + d)
}

// lastOffset is the clock offset last set on a server whose offset file
// locklab cannot read back (it is the container's, or on another host).
type lastOffset struct {
	mu sync.Mutex
	d  time.Duration
}

func (o *lastOffset) set(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.d = d
}

func (o *lastOffset) get() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.d
}

// restartUnderFakeTime starts already running nodes again under libfaketime
// (same ports, same data): the starters of servers whose start code does
// not take an environment (ZooKeeper, MariaDB) use it. All nodes go down
// and come up together, so an ensemble forms again as at its first start.
func restartUnderFakeTime(ctx context.Context, nodes []*Node) error {
	for _, n := range nodes {
		env, err := fakeTimeEnv(n.proc.dir, false)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		// Nothing is in it yet worth an orderly shutdown.
		n.proc.stop(0)
		n.proc.env = append(n.proc.env, env...)
	}
	for _, n := range nodes {
		if err := n.proc.start(); err != nil {
			return err
		}
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func(i int, n *Node) { defer wg.Done(); errs[i] = waitHealthy(ctx, n) }(i, n)
	}
	wg.Wait()
	return errors.Join(errs...)
}

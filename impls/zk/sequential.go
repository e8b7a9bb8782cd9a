package zk

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/impls"
)

// SequentialApproach: ZooKeeper's lock recipe. Each contender creates an
// ephemeral sequential node under the key; the lowest sequence holds the
// lock; each waiter watches only its predecessor, so a release wakes one
// client (no herd) and grants go in arrival order. The create is
// "protected": a GUID in the name lets the client find its node when the
// reply was lost. The sequence number is a fencing token.
var SequentialApproach = impls.Approach{
	Name:            "zk-sequential",
	Server:          impls.ZooKeeper,
	Caps:            impls.Capabilities{Fair: true, Blocking: true, Fencing: true, FaultTolerant: true, LossSignal: true},
	Safe:            true,
	CrashFreedAfter: SessionTimeout,
	Survives:        "client crashes (session expiry), loss of a ZooKeeper minority, lost create replies",
	Summary:         "ephemeral sequential node under the key; lowest holds; each waiter watches its predecessor",
	Fails:           "a holder paused past its session timeout keeps working after its node is gone; only the fencing token (sequence) can stop its writes",
	New: func(ctx context.Context, env impls.Env) (impls.Locker, error) {
		s, err := connectUnder(ctx, env.Clock, env.Endpoints[impls.ZooKeeper].Addrs, root+"/sequential")
		if err != nil {
			return nil, err
		}
		return &Sequential{s: s}, nil
	},
}

// Sequential is one client of the approach.
type Sequential struct{ s *session }

// sequenceOf reads the 10-digit suffix ZooKeeper appends.
func sequenceOf(name string) (uint64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	n, err := strconv.ParseUint(name[len(name)-10:], 10, 64)
	return n, err == nil
}

// Acquire queues behind the current holder and waits its turn.
func (l *Sequential) Acquire(ctx context.Context, key string, opt impls.AcquireOptions) (impls.Lease, error) {
	name, err := escapeKey(key)
	if err != nil {
		return nil, err
	}
	// The key's directory is persistent, not a container: sequence numbers
	// restart in a new directory, and the fencing token must only grow.
	dir := root + "/sequential/" + name
	if err := l.s.ensure(ctx, dir); err != nil {
		return nil, err
	}
	token := impls.NewToken()
	lost := l.s.lostChan()
	var node string
	err = l.s.do(ctx, func() error {
		var err error
		node, err = l.s.conn.CreateProtectedEphemeralSequential(dir+"/lock-", []byte(token), openACL)
		return err
	}, func(err error) {
		if err == nil {
			_ = l.s.conn.Delete(node, -1) // landed after we gave up: leave the queue
		}
	})
	if err != nil {
		return nil, outcome("create "+key, err)
	}
	mine := node[strings.LastIndex(node, "/")+1:]
	seq, _ := sequenceOf(mine)
	leave := func() {
		// Leave the queue in the background: ctx may be over.
		go func() { _ = l.s.conn.Delete(node, -1) }()
	}
	for {
		var children []string
		err := l.s.do(ctx, func() error {
			var err error
			children, _, err = l.s.conn.Children(dir)
			return err
		}, nil)
		if err != nil {
			leave()
			if errors.Is(err, impls.ErrIndeterminate) {
				return nil, impls.NotAcquiredBy(ctx) // we left the queue
			}
			return nil, outcome("list "+key, err)
		}
		sort.Slice(children, func(i, j int) bool {
			a, _ := sequenceOf(children[i])
			b, _ := sequenceOf(children[j])
			return a < b
		})
		pos := -1
		for i, c := range children {
			if c == mine {
				pos = i
				break
			}
		}
		switch {
		case pos < 0:
			// Our node is gone: the session expired while we waited.
			return nil, fmt.Errorf("%w: %w: %s: our queue node vanished", impls.ErrNotAcquired, impls.ErrSessionLost, key)
		case pos == 0:
			return &zkLease{s: l.s, unique: true, key: key, path: node, token: token, fence: seq, fenced: true, lost: lost, sid: l.s.sessionID()}, nil
		case opt.Try:
			leave()
			return nil, fmt.Errorf("%w: %s is held", impls.ErrNotAcquired, key)
		}
		var watch <-chan zk.Event
		var exists bool
		err = l.s.do(ctx, func() error {
			var err error
			exists, _, watch, err = l.s.conn.ExistsW(dir + "/" + children[pos-1])
			return err
		}, nil)
		if err != nil {
			leave()
			if errors.Is(err, impls.ErrIndeterminate) {
				return nil, impls.NotAcquiredBy(ctx)
			}
			return nil, outcome("watch "+key, err)
		}
		if !exists {
			continue
		}
		select {
		case <-watch:
		case <-ctx.Done():
			leave()
			return nil, impls.NotAcquiredBy(ctx)
		case <-time.After(SessionTimeout):
			// Re-check now and then: a watch is lost if the session is.
		}
	}
}

// Close drops the connection as a crash would.
func (l *Sequential) Close() error { return l.s.Close() }

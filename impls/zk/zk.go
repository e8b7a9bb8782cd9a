// Package zk holds the ZooKeeper lock approaches, one file each, and the
// session handling they share.
package zk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/impls"
)

// Register adds every ZooKeeper approach to r.
func Register(r *impls.Registry) {
	r.Register(EphemeralApproach)
	r.Register(SequentialApproach)
	r.Register(RecipeApproach)
}

// SessionTimeout is the session length clients ask for. The embedded
// ensemble's tickTime of 200 ms allows 0.4 s to 4 s.
const SessionTimeout = 2 * time.Second

const root = "/locklab"

var openACL = zk.WorldACL(zk.PermAll)

// escapeKey turns a lock key into one znode name: "/" and "%" are escaped;
// characters ZooKeeper refuses in paths are rejected before any call.
func escapeKey(key string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: zookeeper lock key %q: %s", impls.ErrInvalidKey, key, why)
	}
	switch {
	case key == "":
		return bad("empty")
	case len(key) > 1000:
		return bad(fmt.Sprintf("%d bytes, at most 1000", len(key)))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case key == "." || key == "..":
		return bad("reserved name")
	}
	for _, r := range key {
		if unicode.IsControl(r) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return bad(fmt.Sprintf("character %U is not allowed in a znode path", r))
		}
	}
	return strings.NewReplacer("%", "%25", "/", "%2F").Replace(key), nil
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// session is one client's ZooKeeper connection. It turns session expiry
// into a loss signal, waits for a live session before each request so that
// an unreachable ensemble is "unavailable" rather than a hang, and can be
// closed like a crash: the connection drops, the session is left to expire.
type session struct {
	conn *zk.Conn

	mu       sync.Mutex
	ensured  map[string]bool // persistent nodes known to exist
	lost     chan struct{}   // closed when the current session expires
	sockets  []net.Conn
	crashed  bool
	stopLoop chan struct{}
}

// connectUnder connects a client and makes sure its approach's directory
// exists.
func connectUnder(ctx context.Context, servers []string, dir string) (*session, error) {
	s, err := connect(ctx, servers)
	if err != nil {
		return nil, err
	}
	if err := s.ensure(ctx, dir); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func connect(ctx context.Context, servers []string) (*session, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("zookeeper: no endpoint")
	}
	s := &session{lost: make(chan struct{}), stopLoop: make(chan struct{}), ensured: map[string]bool{}}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.crashed {
			return nil, errors.New("client crashed")
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err == nil {
			s.sockets = append(s.sockets, c)
		}
		return c, err
	}
	conn, events, err := zk.Connect(servers, SessionTimeout, zk.WithLogger(nopLogger{}), zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	s.conn = conn
	go s.watch(events)
	if err := s.waitSession(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.ensure(ctx, root); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// watch turns session expiry into the loss signal of the leases taken in
// that session. go-zookeeper opens a new session silently; without this
// the holder would never learn its ephemeral nodes are gone.
func (s *session) watch(events <-chan zk.Event) {
	for {
		select {
		case <-s.stopLoop:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.State == zk.StateExpired {
				s.mu.Lock()
				close(s.lost)
				s.lost = make(chan struct{})
				s.mu.Unlock()
			}
		}
	}
}

func (s *session) lostChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// waitSession returns once a live session exists, or ErrUnavailable when
// ctx ends first: no request was sent.
func (s *session) waitSession(ctx context.Context) error {
	for s.conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			return fmt.Errorf("zookeeper: %w: no session (state %v): %w", impls.ErrUnavailable, s.conn.State(), context.Cause(ctx))
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// do runs a blocking ZooKeeper call until it returns or ctx ends. When ctx
// ends first the call goes on; abandon then runs with its result, so a
// create that lands after we gave up can be undone.
func (s *session) do(ctx context.Context, call func() error, abandon func(error)) error {
	if err := s.waitSession(ctx); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if abandon != nil {
			go func() { abandon(<-done) }()
		}
		return fmt.Errorf("zookeeper: %w: %w", impls.ErrIndeterminate, context.Cause(ctx))
	}
}

// ensure creates a persistent node and its parents if missing. Nodes it
// has seen are remembered: lock directories are never deleted.
func (s *session) ensure(ctx context.Context, path string) error {
	s.mu.Lock()
	known := s.ensured[path]
	s.mu.Unlock()
	if known {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		err := s.do(ctx, func() error {
			_, err := s.conn.Create(p, nil, 0, openACL)
			return err
		}, nil)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return outcome("create "+p, err)
		}
	}
	s.mu.Lock()
	s.ensured[path] = true
	s.mu.Unlock()
	return nil
}

// deleteIfOurs deletes path if it holds our token: the undo of a create
// whose reply was lost.
func (s *session) deleteIfOurs(path, token string) error {
	data, stat, err := s.conn.Get(path)
	if err != nil {
		return err
	}
	if string(data) != token {
		return zk.ErrNoNode
	}
	return s.conn.Delete(path, stat.Version)
}

// outcome maps a ZooKeeper error to the lab's outcomes.
func outcome(op string, err error) error {
	switch {
	case errors.Is(err, impls.ErrIndeterminate), errors.Is(err, impls.ErrUnavailable), errors.Is(err, impls.ErrNotAcquired):
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, zk.ErrNoServer):
		return fmt.Errorf("%s: %w: %w", op, impls.ErrUnavailable, err)
	default: // connection closed mid-request, session expired, ...
		return fmt.Errorf("%s: %w: %w", op, impls.ErrIndeterminate, err)
	}
}

// Close drops the connection as a crash would: the socket closes, no
// close-session request is sent, and the session (with its ephemeral
// nodes) lives until the ensemble expires it.
func (s *session) Close() error {
	s.mu.Lock()
	if s.crashed {
		s.mu.Unlock()
		return nil
	}
	s.crashed = true
	for _, c := range s.sockets {
		c.Close()
	}
	s.mu.Unlock()
	close(s.stopLoop)
	// Close sends a close request it can no longer deliver and gives up
	// after a second; it also stops go-zookeeper's reconnect loop.
	go s.conn.Close()
	return nil
}

// zkLease is a lock held through an ephemeral node.
type zkLease struct {
	s         *session
	unique    bool // path is ours alone (sequential): delete without reading
	key, path string
	token     string
	fence     uint64
	fenced    bool
	lost      <-chan struct{}
	releaseMu sync.Mutex
	released  bool
}

func (l *zkLease) Key() string           { return l.key }
func (l *zkLease) Token() (uint64, bool) { return l.fence, l.fenced }
func (l *zkLease) ValidUntil() time.Time { return time.Time{} } // held while the session lives
func (l *zkLease) Lost() <-chan struct{} { return l.lost }

func (l *zkLease) Extend(context.Context, time.Duration) error {
	return fmt.Errorf("zookeeper locks live as long as the session (heartbeats renew it): %w", impls.ErrUnsupported)
}

// Release deletes the node if it is still ours.
func (l *zkLease) Release(ctx context.Context) error {
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	if l.released {
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	}
	err := l.s.do(ctx, func() error {
		if l.unique {
			return l.s.conn.Delete(l.path, -1)
		}
		return l.s.deleteIfOurs(l.path, l.token)
	}, nil)
	switch {
	case err == nil:
		l.released = true
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		l.released = true
		return fmt.Errorf("release %s: %w", l.key, impls.ErrNotHeld)
	default:
		return outcome("release "+l.key, err)
	}
}

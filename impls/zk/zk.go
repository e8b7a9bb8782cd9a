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
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/clock"
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
	conn  *zk.Conn
	clock clock.Clock // the client's lease clock
	// heard is, for each session, the send time of the latest request
	// the ensemble is known to have received (it answered), on the
	// client's own clock. A holder believes its lock lives until heard +
	// SessionTimeout: the ensemble expires a session that long after it
	// last heard from the client, and the client cannot know better.
	heard   map[int64]time.Time
	dead    map[int64]bool // sessions the client can no longer believe in
	heardMu sync.Mutex     // apart from mu: the dialer holds mu while it dials
	connP   atomic.Pointer[zk.Conn]

	mu       sync.Mutex
	ensured  map[string]bool // persistent nodes known to exist
	lost     chan struct{}   // closed when the current session expires
	sockets  []net.Conn
	crashed  bool
	stopLoop chan struct{}
}

// connectUnder connects a client and makes sure its approach's directory
// exists.
func connectUnder(ctx context.Context, clk clock.Clock, servers []string, dir string) (*session, error) {
	s, err := connect(ctx, clk, servers)
	if err != nil {
		return nil, err
	}
	if err := s.ensure(ctx, dir); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func connect(ctx context.Context, clk clock.Clock, servers []string) (*session, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("zookeeper: no endpoint")
	}
	if clk == nil {
		clk = systemClock{}
	}
	s := &session{lost: make(chan struct{}), stopLoop: make(chan struct{}), ensured: map[string]bool{}, clock: clk,
		heard: map[int64]time.Time{}, dead: map[int64]bool{}}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.crashed {
			return nil, errors.New("client crashed")
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err == nil {
			s.sockets = append(s.sockets, c)
			c = &heardConn{Conn: c, s: s}
		}
		return c, err
	}
	conn, events, err := zk.Connect(servers, SessionTimeout, zk.WithLogger(nopLogger{}), zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	s.conn = conn
	s.connP.Store(conn)
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

// heardConn dates what the ensemble has certainly received. A reply read
// proves the server got the request it answers, so the session was alive
// on the server when that request was sent: the holder may count its
// session from then. The time a reply is read proves less: a reply queued
// while the holder was paused (SIGSTOP) is read after the pause, long after
// the server last heard from it. ZooKeeper answers in order, so each read
// is taken to answer the oldest write not yet answered.
type heardConn struct {
	net.Conn
	s      *session
	mu     sync.Mutex
	writes []time.Time // send times of requests not yet answered, oldest first
}

func (c *heardConn) Write(b []byte) (int, error) {
	now := c.s.clock.Now()
	c.mu.Lock()
	if len(c.writes) < 1024 {
		c.writes = append(c.writes, now)
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *heardConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		if len(c.writes) > 0 {
			sent := c.writes[0]
			c.writes = c.writes[1:]
			c.mu.Unlock()
			c.s.heardAt(sent)
		} else {
			c.mu.Unlock()
		}
	}
	return n, err
}

func (s *session) heardAt(sent time.Time) {
	conn := s.connP.Load()
	if conn == nil {
		return // still connecting: no session yet
	}
	sid := conn.SessionID()
	if sid == 0 {
		return
	}
	now := s.clock.Now()
	s.heardMu.Lock()
	defer s.heardMu.Unlock()
	last, seen := s.heard[sid]
	switch {
	case s.dead[sid]:
	case seen && now.Sub(last) > SessionTimeout:
		// Longer than a session without a confirmed contact (a pause, a
		// partition): the ensemble has expired the session, whatever
		// arrives now (replies held back, the expiry notice itself).
		s.dead[sid] = true
	case sent.After(last):
		s.heard[sid] = sent
	}
}

// sessionID is the session requests go out in now.
func (s *session) sessionID() int64 {
	if conn := s.connP.Load(); conn != nil {
		return conn.SessionID()
	}
	return 0
}

// validUntil is a holder's belief about a lock taken in session sid: when
// it last sent a request the ensemble answered in that session, plus the
// session timeout. Once the session is gone nothing more is heard in it, so the
// belief stops moving.
func (s *session) validUntil(sid int64) time.Time {
	s.heardMu.Lock()
	defer s.heardMu.Unlock()
	h, ok := s.heard[sid]
	if !ok {
		return time.Time{}
	}
	return h.Add(SessionTimeout)
}

// systemClock is the real clock, for clients given none.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

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
		if err := s.createDir(ctx, p); err != nil {
			return outcome("create "+p, err)
		}
	}
	s.mu.Lock()
	s.ensured[path] = true
	s.mu.Unlock()
	return nil
}

// dirRetry is the pause between tries of a directory create whose
// connection dropped.
const dirRetry = 100 * time.Millisecond

// createDir creates one persistent node unless it exists. Creating a
// directory is idempotent, so a try whose connection dropped (an ensemble
// member still joining the quorum closes its clients' connections) is
// tried again until ctx ends, instead of failing a client at start-up.
func (s *session) createDir(ctx context.Context, p string) error {
	for {
		err := s.do(ctx, func() error {
			_, err := s.conn.Create(p, nil, 0, openACL)
			return err
		}, nil)
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer):
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(dirRetry):
		}
	}
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
	sid       int64 // the session the lock was taken in
	releaseMu sync.Mutex
	released  bool
}

func (l *zkLease) Key() string           { return l.key }
func (l *zkLease) Token() (uint64, bool) { return l.fence, l.fenced }
func (l *zkLease) ValidUntil() time.Time { return l.s.validUntil(l.sid) }
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

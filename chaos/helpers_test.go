package chaos

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/internal/procstat"
)

// startCluster starts real servers for one test and stops them after it.
func startCluster(t *testing.T, cfg cluster.LocalConfig) *cluster.Cluster {
	t.Helper()
	c, err := cluster.StartLocal(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start servers: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// inject injects f on t and fails the test if it cannot; the heal is also
// registered as a cleanup, so a failing test leaves no fault behind.
func inject(t *testing.T, f Fault, targets ...Target) Heal {
	t.Helper()
	h, err := InjectAll(context.Background(), f, targets)
	if err != nil {
		t.Fatalf("inject %s: %v", f.Kind(), err)
	}
	if h == nil {
		return func(context.Context) error { return nil }
	}
	t.Cleanup(func() { h(context.Background()) })
	return h
}

func heal(t *testing.T, h Heal) {
	t.Helper()
	if err := h(context.Background()); err != nil {
		t.Fatalf("heal: %v", err)
	}
}

func randomKey(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// redisConn speaks RESP over one TCP connection, so a test sees exactly
// what happens to that connection (a client library would reconnect and
// hide it).
type redisConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRedis(t *testing.T, addr string) *redisConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &redisConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// send writes one command without waiting for its reply.
func (c *redisConn) send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		c.t.Fatalf("send %v: %v", args, err)
	}
}

// errNoReply: nothing came back within the wait (the connection is still
// open); other errors mean the connection broke.
var errNoReply = errors.New("no reply")

// reply reads one reply line ("+OK", "$-1", the bulk string's value) within
// wait. A timeout leaves the reader usable for a later read: the deadline
// only interrupts the wait.
func (c *redisConn) reply(wait time.Duration) (string, error) {
	c.conn.SetReadDeadline(time.Now().Add(wait))
	line, err := c.r.ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && line == "" {
		return "", errNoReply
	}
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		v, err := c.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		return strings.TrimRight(v, "\r\n"), nil
	}
	return line, nil
}

// do sends a command and waits for its reply.
func (c *redisConn) do(wait time.Duration, args ...string) (string, error) {
	c.send(args...)
	return c.reply(wait)
}

// must is do that fails the test unless the reply comes.
func (c *redisConn) must(args ...string) string {
	c.t.Helper()
	r, err := c.do(2*time.Second, args...)
	if err != nil {
		c.t.Fatalf("%v: %v", args, err)
	}
	return r
}

// procState is a process's state letter from /proc: R, S, T (stopped)...
func procState(t *testing.T, pid int) string {
	t.Helper()
	st, err := procstat.Read(pid)
	if err != nil {
		return ""
	}
	return string(st.State)
}

func serverKind(server string) impls.Server { return impls.Server(server) }

// nodesOf gives ResolveNodes the nodes of a kind of c, every node for "".
func nodesOf(c *cluster.Cluster) func(string) []*cluster.Node {
	return func(server string) []*cluster.Node {
		if server == "" {
			return c.Nodes()
		}
		return c.NodesOf(impls.Server(server))
	}
}

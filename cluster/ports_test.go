package cluster

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/locklab/locklab/impls"
)

// TestKilledNodeKeepsItsPort: while a node is killed its port stays bound
// (no other program can be given it) yet refuses connections, as a dead
// server's does; a restart gets it back.
func TestKilledNodeKeepsItsPort(t *testing.T) {
	ctx := context.Background()
	c, err := StartLocal(ctx, ForBackends(impls.Redis))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := c.NodesOf(impls.Redis)[0]
	addr, err := net.ResolveTCPAddr("tcp", n.DirectAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	// A plain bind (no SO_REUSEADDR) fails only if a socket holds the port.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: addr.Port, Addr: [4]byte{127, 0, 0, 1}})
	syscall.Close(fd)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("bind to the killed node's port: %v, want EADDRINUSE (the port is not held)", err)
	}
	if conn, err := net.Dial("tcp", n.DirectAddr()); err == nil {
		conn.Close()
		t.Fatal("the killed node's port accepts connections")
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatalf("restart on the held port: %v", err)
	}
}

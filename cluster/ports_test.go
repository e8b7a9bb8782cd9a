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
	c, err := StartLocal(ctx, ForServers(impls.Redis))
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
	if held := n.proc.held.ports(); len(held) != 1 || held[0] != addr.Port {
		t.Fatalf("ports held %v, want %d", held, addr.Port)
	}
	checkPortHeld(t, addr.Port)
	if err := n.Restart(ctx); err != nil {
		t.Fatalf("restart on the held port: %v", err)
	}
}

// checkPortHeld fails the test unless a socket holds port on 127.0.0.1
// without accepting connections on it (a killed server's port, held).
func checkPortHeld(t *testing.T, port int) {
	t.Helper()
	// A plain bind (no SO_REUSEADDR) fails only if a socket holds the port.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	syscall.Close(fd)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("bind to the killed server's port %d: %v, want EADDRINUSE (the port is not held)", port, err)
	}
	if conn, err := net.Dial("tcp", addr(port)); err == nil {
		conn.Close()
		t.Fatalf("the killed server's port %d accepts connections", port)
	}
}

func TestServerPortRange(t *testing.T) {
	for _, tc := range []struct {
		ephLo, ephHi int
		lo, hi       int
		ok           bool
	}{
		{32768, 60999, 20000, 32768, true}, // Linux's default
		{49152, 65535, 20000, 49152, true}, // IANA's
		{1024, 40000, 40001, 65536, true},  // room above only
		{1024, 65000, 0, 0, false},         // no room: the kernel picks
		{21000, 64000, 0, 0, false},
	} {
		lo, hi, ok := serverPortRange(tc.ephLo, tc.ephHi)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("serverPortRange(%d, %d) = %d, %d, %v; want %d, %d, %v", tc.ephLo, tc.ephHi, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// Servers' ports are distinct, free, and outside the kernel's ephemeral
// range, which outgoing connections draw from.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	ephLo, ephHi, err := ephemeralRange()
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, ok := serverPortRange(ephLo, ephHi)
	if !ok {
		t.Fatalf("this kernel's ephemeral range %d-%d leaves no room; the test needs one that does", ephLo, ephHi)
	}
	ports, err := freePorts(200)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi {
			t.Fatalf("port %d outside %d-%d", p, lo, hi-1)
		}
		if seen[p] {
			t.Fatalf("port %d given twice", p)
		}
		seen[p] = true
	}
	l, err := net.Listen("tcp", addr(ports[0]))
	if err != nil {
		t.Fatalf("a port given is not free: %v", err)
	}
	l.Close()
}

// A port held for a killed server is not given to another server, even
// when it is the only one of the range.
func TestPickPortsSkipsAHeldPort(t *testing.T) {
	free, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	held := holdPorts(free)
	defer held.release()
	if len(held.fds) != 1 {
		t.Fatal("could not hold a free port")
	}
	ports, err := pickPorts(1, free[0], free[0]+1)
	if err != nil {
		t.Fatal(err)
	}
	if ports[0] == free[0] {
		t.Fatalf("pickPorts gave out the held port %d", free[0])
	}
}

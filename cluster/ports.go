package cluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// portHold keeps a killed server's ports from locklab's other clusters and
// from the kernel's own picks until it is restarted, and a starting
// server's until it listens (the servers bind with SO_REUSEADDR, as the
// hold does, so a hold never stands in their way). Tests and runs start
// clusters side by side: without it, a port freed by a killed member can be handed to a server of another
// cluster, whose peers then talk to the wrong cluster when the member
// comes back (seen: etcd "request cluster ID mismatch", and a restart that
// found its port taken). A socket that is bound but not listening does
// both jobs: the kernel never picks its port for a bind to port 0, nor does
// freePorts (a plain bind fails), and a connection to it is refused, as to
// a dead server. It does not stop a program that binds the port by number
// with SO_REUSEADDR and listens; hence servers' ports are picked outside the
// range anyone else is given ports from (serverPortRange).
type portHold struct {
	fds []int
}

// holdPorts binds what it can of ports on 127.0.0.1; a port it cannot bind
// (still in use) is left alone.
func holdPorts(ports []int) *portHold {
	h := &portHold{}
	for _, port := range ports {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			continue
		}
		// As the servers do: connections of the dead server in TIME_WAIT
		// must not stop the hold.
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			syscall.Close(fd)
			continue
		}
		h.fds = append(h.fds, fd)
	}
	return h
}

// ports are those it holds.
func (h *portHold) ports() []int {
	var ports []int
	for _, fd := range h.fds {
		if sa, err := syscall.Getsockname(fd); err == nil {
			ports = append(ports, sa.(*syscall.SockaddrInet4).Port)
		}
	}
	return ports
}

// release gives the ports back; a nil hold does nothing.
func (h *portHold) release() {
	if h == nil {
		return
	}
	for _, fd := range h.fds {
		syscall.Close(fd)
	}
	h.fds = nil
}

// Servers get their ports outside the kernel's ephemeral range. A port
// from that range (what a bind to port 0 returns) is also what the kernel
// gives every outgoing connection and every other program's port-0
// listener: between the moment it was found free and the moment the
// server binds it, or while a stopped container's published port waits for
// its restart, anyone could take it (seen: "docker start redis-1: ... bind:
// address already in use" with test packages running side by side). Below
// that range only a program that asks for a port by number can take one,
// and locklab's own pickers check by binding first.
const (
	serverPortsFrom = 20000 // up to the ephemeral range's start
	minServerPorts  = 2000  // a smaller range falls back to port 0
)

// serverPortRange is [lo, hi) of the ports servers are given, for a kernel
// whose ephemeral ports are [ephLo, ephHi]; ok false when no range outside
// it is wide enough.
func serverPortRange(ephLo, ephHi int) (lo, hi int, ok bool) {
	if ephLo-serverPortsFrom >= minServerPorts {
		return serverPortsFrom, ephLo, true
	}
	if 65536-(ephHi+1) >= minServerPorts {
		return ephHi + 1, 65536, true
	}
	return 0, 0, false
}

// ephemeralRange reads the kernel's ephemeral port range.
func ephemeralRange() (lo, hi int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("ip_local_port_range: %q", b)
	}
	if lo, err = strconv.Atoi(f[0]); err == nil {
		hi, err = strconv.Atoi(f[1])
	}
	return lo, hi, err
}

// freePorts finds n distinct free loopback ports for servers, outside the
// ephemeral range when the kernel leaves room for it, else from the kernel.
// A port is free when a plain bind (no SO_REUSEADDR) succeeds: unlike a
// listen with SO_REUSEADDR, as servers and Go's net.Listen do, it fails on
// a port another cluster holds for a killed server (holdPorts).
func freePorts(n int) ([]int, error) {
	lo, hi := 0, 0
	if ephLo, ephHi, err := ephemeralRange(); err == nil {
		lo, hi, _ = serverPortRange(ephLo, ephHi)
	}
	return pickPorts(n, lo, hi)
}

// pickPorts tries random ports of [lo, hi), then ports the kernel picks.
func pickPorts(n, lo, hi int) ([]int, error) {
	var fds []int
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	ports := make([]int, 0, n)
	take := func(port int) error {
		fd, got, err := bindPlain(port)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		ports = append(ports, got)
		return nil
	}
	for tries := 0; hi > lo && len(ports) < n && tries < 50*n; tries++ {
		_ = take(lo + rand.IntN(hi-lo)) // taken: try another
	}
	for len(ports) < n {
		if err := take(0); err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
	}
	return ports, nil
}

// bindPlain binds a socket to port on 127.0.0.1 (0: one the kernel picks)
// without SO_REUSEADDR, and says which port it got.
func bindPlain(port int) (fd, got int, err error) {
	fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return 0, 0, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return 0, 0, err
	}
	return fd, sa.(*syscall.SockaddrInet4).Port, nil
}

// holdPortsWithin holds ports as holdPorts does, trying again for up to d
// while some are still bound by their former owner (the Docker engine
// lets a stopped container's published port go a moment after it reports
// the container stopped).
func holdPortsWithin(ports []int, d time.Duration) *portHold {
	deadline := time.Now().Add(d)
	for {
		h := holdPorts(ports)
		if len(h.fds) == len(ports) || time.Now().After(deadline) {
			return h
		}
		h.release()
		time.Sleep(20 * time.Millisecond)
	}
}

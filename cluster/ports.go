package cluster

import (
	"syscall"
)

// portHold keeps a killed server's ports from other programs until it is
// restarted. Tests and runs start clusters side by side: without it, a
// port freed by a killed member can be handed to a server of another
// cluster, whose peers then talk to the wrong cluster when the member
// comes back (seen: etcd "request cluster ID mismatch", and a restart that
// found its port taken). A socket that is bound but not listening does
// both jobs: the kernel never picks its port for a bind to port 0, and a
// connection to it is refused, as to a dead server.
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

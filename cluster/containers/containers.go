// Package containers is what locklab's Docker mode asks of a container
// engine, in the standard library's types only: package cluster drives
// containers through it, and package cluster/docker is the engine locklab
// ships (the Docker client and testcontainers-go). A program that starts
// no containers (a user's `go test` through locklabtest) links neither.
package containers

import (
	"context"
	"io"
	"net/netip"
)

// Engine runs containers. Containers and networks are named by the ids it
// returns; its errors are the engine's own.
type Engine interface {
	// Host is the engine's address as its client reaches it, in
	// DOCKER_HOST's form: unix:///var/run/docker.sock, tcp://10.0.0.5:2376.
	Host() string
	// HasImage says whether the engine has the image ref.
	HasImage(ctx context.Context, ref string) bool
	// PullImage pulls ref, returning once it is there.
	PullImage(ctx context.Context, ref string) error

	// CreateNetwork makes a bridge network; a valid subnet fixes its
	// addresses (Docker then lets a container choose its own), else the
	// engine picks them.
	CreateNetwork(ctx context.Context, name string, labels map[string]string, subnet netip.Prefix, gateway netip.Addr) (id string, err error)
	// NetworkSubnet is the IPv4 subnet and gateway of a network.
	NetworkSubnet(ctx context.Context, id string) (netip.Prefix, netip.Addr, error)
	RemoveNetwork(ctx context.Context, id string) error
	// Networks and Containers list those carrying the label (its name);
	// Containers lists stopped ones too.
	Networks(ctx context.Context, label string) ([]Labelled, error)
	Containers(ctx context.Context, label string) ([]Labelled, error)

	// Run creates a container, copies its files in and starts it. On an
	// error it may still return the container's id, for removal.
	Run(ctx context.Context, s Spec) (id string, err error)
	Pause(ctx context.Context, id string) error
	Unpause(ctx context.Context, id string) error
	// Kill sends signal ("KILL") to the container's processes.
	Kill(ctx context.Context, id, signal string) error
	Start(ctx context.Context, id string) error
	State(ctx context.Context, id string) (State, error)
	// Remove removes a container, running or not, with its volumes.
	Remove(ctx context.Context, id string) error
	// Disconnect cuts a container from a network; Connect joins it again
	// under alias at ip.
	Disconnect(ctx context.Context, network, id string) error
	Connect(ctx context.Context, network, id, alias string, ip netip.Addr) error
	// Exec runs argv in the running container as user ("": its own) and
	// returns its exit code and what it printed.
	Exec(ctx context.Context, id, user string, argv []string) (code int, out string, err error)
	// CopyFile writes a file into the container, running or not.
	CopyFile(ctx context.Context, id, path string, content []byte, mode int64) error
	// Logs are the last tail lines the container's processes wrote
	// (stdout and stderr together).
	Logs(ctx context.Context, id string, tail int) (string, error)
	// Follow streams what the container prints on stdout from its start
	// until it ends or ctx does.
	Follow(ctx context.Context, id string) (io.ReadCloser, error)
	Close() error
}

// Labelled is a container or network and its labels.
type Labelled struct {
	ID     string
	Labels map[string]string
}

// State is a container's state.
type State struct {
	Running, Paused bool
	Pid             int // its main process's, on the engine's host
}

// Spec is one container to run.
type Spec struct {
	Image, Name     string
	Entrypoint, Cmd []string
	Env, Labels     map[string]string
	User            string // "uid:gid"; "": the image's
	Files           []File // copied in before it starts
	Binds           []string
	Sysctls         map[string]string
	// HostNetwork: on the engine host's network, not Network.
	HostNetwork bool
	// Network is the network it joins under Aliases, at IP (zero: the
	// engine picks).
	Network string
	Aliases []string
	IP      netip.Addr
	// Port ("6379/tcp") is published on PublishIP:PublishPort of the
	// engine's host; "": none.
	Port        string
	PublishIP   netip.Addr
	PublishPort int
}

// File is a file of a container.
type File struct {
	Path    string
	Content []byte
	Mode    int64
}

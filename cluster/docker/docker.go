// Package docker is the container engine locklab's Docker mode runs on
// (package cluster asks it through containers.Engine): the engine
// testcontainers-go finds (DOCKER_HOST, the Docker context,
// ~/.testcontainers.properties), driven with its client. It is a package
// of its own so that only the programs that start containers link
// testcontainers-go, the Docker client and their telemetry: cmd/locklab
// and the tests of Docker mode, not a user's `go test` through
// locklabtest.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	testcontainers "github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/locklab/locklab/cluster/containers"
)

// Engine is a client of one Docker engine.
type Engine struct {
	cli *testcontainers.DockerClient
	mu  sync.Mutex
	// ran are the containers Run started, for Exec and CopyFile, which
	// testcontainers-go offers on its own handle.
	ran map[string]testcontainers.Container
}

var _ containers.Engine = (*Engine)(nil)

// Connect is a client of the engine testcontainers-go finds.
func Connect(ctx context.Context) (containers.Engine, error) {
	// testcontainers' settings are process-wide: its reaper (Ryuk) is an
	// image a machine without a registry cannot pull, and locklab's guard
	// does its job (cluster: docker_guard.go); the setting is read once,
	// at its first use in this process. Its default logger would print
	// every container's life to stderr.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	tclog.SetDefault(quiet{})
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("--cluster docker: the Docker engine does not answer: %w", err)
	}
	return &Engine{cli: cli, ran: map[string]testcontainers.Container{}}, nil
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func (e *Engine) Host() string { return e.cli.DaemonHost() }

func (e *Engine) HasImage(ctx context.Context, ref string) bool {
	_, err := e.cli.ImageInspect(ctx, ref)
	return err == nil
}

func (e *Engine) PullImage(ctx context.Context, ref string) error {
	resp, err := e.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Wait(ctx)
}

func (e *Engine) CreateNetwork(ctx context.Context, name string, labels map[string]string, subnet netip.Prefix, gateway netip.Addr) (string, error) {
	opts := client.NetworkCreateOptions{Driver: "bridge", Labels: labels}
	if subnet.IsValid() {
		opts.IPAM = &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet, Gateway: gateway}}}
	}
	res, err := e.cli.NetworkCreate(ctx, name, opts)
	return res.ID, err
}

func (e *Engine) NetworkSubnet(ctx context.Context, id string) (netip.Prefix, netip.Addr, error) {
	ins, err := e.cli.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	for _, c := range ins.Network.IPAM.Config {
		if c.Subnet.Addr().Is4() {
			return c.Subnet, c.Gateway, nil
		}
	}
	return netip.Prefix{}, netip.Addr{}, errors.New("Docker gave it no IPv4 subnet")
}

func (e *Engine) RemoveNetwork(ctx context.Context, id string) error {
	_, err := e.cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
	return err
}

func (e *Engine) Networks(ctx context.Context, label string) ([]containers.Labelled, error) {
	nets, err := e.cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		return nil, err
	}
	out := make([]containers.Labelled, len(nets.Items))
	for i, n := range nets.Items {
		out[i] = containers.Labelled{ID: n.ID, Labels: n.Labels}
	}
	return out, nil
}

func (e *Engine) Containers(ctx context.Context, label string) ([]containers.Labelled, error) {
	list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		return nil, err
	}
	out := make([]containers.Labelled, len(list.Items))
	for i, c := range list.Items {
		out[i] = containers.Labelled{ID: c.ID, Labels: c.Labels}
	}
	return out, nil
}

func (e *Engine) Run(ctx context.Context, s containers.Spec) (string, error) {
	var files []testcontainers.ContainerFile
	for _, f := range s.Files {
		files = append(files, testcontainers.ContainerFile{Reader: strings.NewReader(string(f.Content)), ContainerFilePath: f.Path, FileMode: f.Mode})
	}
	req := testcontainers.ContainerRequest{
		Image: s.Image, Name: s.Name, Entrypoint: s.Entrypoint, Cmd: s.Cmd, Env: s.Env, Labels: s.Labels,
		Files: files, User: s.User,
		HostConfigModifier: func(hc *container.HostConfig) {
			if s.HostNetwork {
				hc.NetworkMode = "host"
			}
			if s.Port != "" {
				hc.PortBindings = network.PortMap{network.MustParsePort(s.Port): {{HostIP: s.PublishIP, HostPort: strconv.Itoa(s.PublishPort)}}}
			}
			hc.Binds = s.Binds
			hc.Sysctls = s.Sysctls
		},
	}
	if s.Port != "" {
		req.ExposedPorts = []string{s.Port}
	}
	if s.Network != "" {
		req.Networks = []string{s.Network}
		if len(s.Aliases) > 0 {
			req.NetworkAliases = map[string][]string{s.Network: s.Aliases}
		}
		if s.IP.IsValid() {
			req.EndpointSettingsModifier = func(eps map[string]*network.EndpointSettings) {
				if ep := eps[s.Network]; ep != nil {
					ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: s.IP}
				}
			}
		}
	}
	tc, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{Started: true, Logger: quiet{}, ContainerRequest: req})
	if tc == nil {
		return "", err
	}
	id := tc.GetContainerID()
	e.mu.Lock()
	e.ran[id] = tc
	e.mu.Unlock()
	return id, err
}

func (e *Engine) Pause(ctx context.Context, id string) error {
	_, err := e.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	return err
}

func (e *Engine) Unpause(ctx context.Context, id string) error {
	_, err := e.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	return err
}

func (e *Engine) Kill(ctx context.Context, id, signal string) error {
	_, err := e.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: signal})
	return err
}

func (e *Engine) Start(ctx context.Context, id string) error {
	_, err := e.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

func (e *Engine) State(ctx context.Context, id string) (containers.State, error) {
	res, err := e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return containers.State{}, err
	}
	st := res.Container.State
	if st == nil {
		return containers.State{}, nil
	}
	return containers.State{Running: st.Running, Paused: st.Paused, Pid: st.Pid}, nil
}

func (e *Engine) Remove(ctx context.Context, id string) error {
	_, err := e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	e.mu.Lock()
	delete(e.ran, id)
	e.mu.Unlock()
	return err
}

func (e *Engine) Disconnect(ctx context.Context, net, id string) error {
	_, err := e.cli.NetworkDisconnect(ctx, net, client.NetworkDisconnectOptions{Container: id, Force: true})
	return err
}

func (e *Engine) Connect(ctx context.Context, net, id, alias string, ip netip.Addr) error {
	_, err := e.cli.NetworkConnect(ctx, net, client.NetworkConnectOptions{Container: id,
		EndpointConfig: &network.EndpointSettings{Aliases: []string{alias}, IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip}}})
	return err
}

// started is the handle of a container Run started.
func (e *Engine) started(id string) (testcontainers.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tc, ok := e.ran[id]
	if !ok {
		return nil, fmt.Errorf("container %s was not started by this engine's client", id)
	}
	return tc, nil
}

func (e *Engine) Exec(ctx context.Context, id, user string, argv []string) (int, string, error) {
	tc, err := e.started(id)
	if err != nil {
		return 0, "", err
	}
	opts := []tcexec.ProcessOption{tcexec.Multiplexed()}
	if user != "" {
		opts = append(opts, tcexec.WithUser(user))
	}
	code, r, err := tc.Exec(ctx, argv, opts...)
	if err != nil {
		return code, "", err
	}
	out, _ := io.ReadAll(io.LimitReader(r, 4096))
	return code, string(out), nil
}

func (e *Engine) CopyFile(ctx context.Context, id, path string, content []byte, mode int64) error {
	tc, err := e.started(id)
	if err != nil {
		return err
	}
	return tc.CopyToContainer(ctx, content, path, mode)
}

func (e *Engine) Logs(ctx context.Context, id string, tail int) (string, error) {
	res, err := e.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(tail)})
	if err != nil {
		return "", err
	}
	defer res.Close()
	var out strings.Builder
	stdcopy.StdCopy(&out, &out, res)
	return out.String(), nil
}

func (e *Engine) Follow(ctx context.Context, id string) (io.ReadCloser, error) {
	logs, err := e.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, Follow: true})
	if err != nil {
		return nil, err
	}
	r, w := io.Pipe()
	go func() {
		stdcopy.StdCopy(w, io.Discard, logs)
		logs.Close()
		w.Close()
	}()
	return readCloser{r, logs}, nil
}

// readCloser reads the demultiplexed stream; closing it ends the engine's.
type readCloser struct {
	*io.PipeReader
	logs io.Closer
}

func (r readCloser) Close() error {
	r.logs.Close()
	return r.PipeReader.Close()
}

func (e *Engine) Close() error { return e.cli.Close() }

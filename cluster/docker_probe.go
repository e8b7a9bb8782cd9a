package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	testcontainers "github.com/testcontainers/testcontainers-go"
)

// probeName is the name of the probe's container in its session (after
// "locklab-<session>-").
const probeName = "stall-probe"

// probePath is where the probe's program is mounted in its container.
const probePath = "/locklab-probe"

// RunProbe runs a program of this machine, argv[0] mounted read-only (so
// it must run on the image's system: locklab's own binary does on the
// local images, Debian's as the host's), in a container beside the
// servers: from a server image of theirs, on their network, in the
// engine's scheduling of containers, where the servers starve when the
// machine does. The program must print a line once it runs: RunProbe
// waits for it (a program the image cannot run is an error, with what it
// said). out reads what it prints after that, from a goroutine of its
// own, until the container ends; the container goes with the cluster (and
// with locklab: it carries the session's labels, which the guard
// removes). Only a Docker cluster has one.
func (c *Cluster) RunProbe(ctx context.Context, argv []string, out func(io.Reader)) error {
	d := c.docker
	if d == nil {
		return errors.New("the servers do not run in containers")
	}
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return fmt.Errorf("probe %q: want the program's absolute path", argv)
	}
	if len(c.nodes) == 0 {
		return errors.New("no server container to run beside")
	}
	ip, err := d.nextAddress()
	if err != nil {
		return err
	}
	req := testcontainers.GenericContainerRequest{Started: true, Logger: quietLogger{}, ContainerRequest: testcontainers.ContainerRequest{
		Image: d.imageOf(c.nodes[0].Server), Name: "locklab-" + d.id + "-" + probeName,
		Entrypoint: []string{probePath}, Cmd: argv[1:], Labels: d.labels(),
		Networks: []string{d.network},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.Binds = []string{argv[0] + ":" + probePath + ":ro"}
		},
		EndpointSettingsModifier: func(eps map[string]*network.EndpointSettings) {
			if ep := eps[d.network]; ep != nil {
				ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ip}
			}
		},
	}}
	tc, err := testcontainers.GenericContainer(ctx, req)
	if tc != nil {
		ctr := &dockerContainer{cli: d.cli, tc: tc, id: tc.GetContainerID(), name: probeName, network: d.network, ip: ip}
		c.closeMu.Lock()
		closed := c.closed
		if !closed {
			d.probes = append(d.probes, ctr) // Close removes it
		}
		c.closeMu.Unlock()
		if closed {
			ctr.remove(context.Background())
			return errors.New("the cluster closed")
		}
	}
	if err != nil {
		return fmt.Errorf("probe container: %w", err)
	}
	logs, err := d.cli.ContainerLogs(context.WithoutCancel(ctx), tc.GetContainerID(), client.ContainerLogsOptions{ShowStdout: true, Follow: true})
	if err != nil {
		return wrapDocker("logs", probeName, err)
	}
	r, w := io.Pipe()
	go func() {
		stdcopy.StdCopy(w, io.Discard, logs)
		logs.Close()
		w.Close()
	}()
	br := bufio.NewReader(r)
	first := make(chan error, 1)
	go func() {
		_, err := br.ReadString('\n')
		first <- err
	}()
	select {
	case err = <-first:
	case <-time.After(probeStartTimeout):
		err = fmt.Errorf("no word within %v", probeStartTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		r.Close()
		ctr := &dockerContainer{cli: d.cli, id: tc.GetContainerID(), name: probeName}
		said := ctr.logTail(5)
		ctr.remove(context.Background())
		return fmt.Errorf("probe container %s: %v: %s", strings.Join(argv, " "), err, said)
	}
	go func() {
		out(br)
		r.Close()
	}()
	return nil
}

// probeStartTimeout bounds how long a probe's container may take to say
// it runs: a loaded machine starts containers in seconds.
const probeStartTimeout = 30 * time.Second

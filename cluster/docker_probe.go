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

	"github.com/locklab/locklab/cluster/containers"
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
	id, err := d.eng.Run(ctx, containers.Spec{
		Image: d.imageOf(c.nodes[0].Server), Name: "locklab-" + d.id + "-" + probeName,
		Entrypoint: []string{probePath}, Cmd: argv[1:], Labels: d.labels(),
		Network: d.network, IP: ip,
		Binds: []string{argv[0] + ":" + probePath + ":ro"},
	})
	if id != "" {
		ctr := &dockerContainer{eng: d.eng, id: id, name: probeName, network: d.network, ip: ip}
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
	r, err := d.eng.Follow(context.WithoutCancel(ctx), id)
	if err != nil {
		return wrapDocker("logs", probeName, err)
	}
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
		ctr := &dockerContainer{eng: d.eng, id: id, name: probeName}
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

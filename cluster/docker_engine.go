package cluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// DockerEngine is the engine a Docker cluster runs on, as its client finds
// it (cluster/docker: DOCKER_HOST, the Docker context,
// ~/.testcontainers.properties).
// An engine reached through a Unix socket is this machine's; any other (a
// TCP address, even 127.0.0.1 through a tunnel) is taken to be another
// machine's: its containers' ports are published on its host and reached
// there, nothing of this machine's file system is mounted into them, and
// the ports of a stopped container are not this machine's to hold.
type DockerEngine struct {
	// URL is how the client reaches it: unix:///var/run/docker.sock,
	// tcp://10.0.0.5:2376.
	URL string
	// Remote: not reached through a socket of this machine.
	Remote bool
	// Host is where its containers' published ports are reached (and
	// published): 127.0.0.1 for this machine's, else the engine's host.
	Host      string
	publishIP netip.Addr
}

// FindDockerEngine says which engine --cluster docker would use, without
// starting anything.
func FindDockerEngine(ctx context.Context, connect Connect) (DockerEngine, error) {
	eng, err := connect.connect(ctx)
	if err != nil {
		return DockerEngine{}, err
	}
	defer eng.Close()
	return parseEngine(ctx, eng.Host())
}

// parseEngine reads the engine's URL; a host name is looked up once, so
// ports are published on, and reached at, one address.
func parseEngine(ctx context.Context, raw string) (DockerEngine, error) {
	e := DockerEngine{URL: raw, Host: "127.0.0.1", publishIP: netip.MustParseAddr("127.0.0.1")}
	u, err := url.Parse(raw)
	if err != nil {
		return e, fmt.Errorf("--cluster docker: the Docker engine's address %q: %w", raw, err)
	}
	switch u.Scheme {
	case "unix", "npipe", "":
		return e, nil
	}
	e.Remote = true
	host := u.Hostname()
	if host == "" || isLoopback(host) {
		return e, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ips, lerr := net.DefaultResolver.LookupNetIP(lctx, "ip4", host)
		if lerr != nil || len(ips) == 0 {
			return e, fmt.Errorf("--cluster docker: the Docker engine's host %s (%s): %v", host, raw, lerr)
		}
		ip = ips[0]
	}
	e.Host, e.publishIP = ip.Unmap().String(), ip.Unmap()
	return e, nil
}

// EngineElsewhere is the host an engine address (DOCKER_HOST's form) names
// when it is not this machine's loopback, "" otherwise; it contacts
// nothing, so an engine on another host is refused before any traffic
// goes there.
func EngineElsewhere(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "unix" || u.Scheme == "npipe" || u.Scheme == "" || isLoopback(u.Hostname()) {
		return ""
	}
	return u.Hostname()
}

// OnAnotherHost says whether its containers' ports are on a host other
// than this machine's loopback: where locklab sends its traffic then.
func (e DockerEngine) OnAnotherHost() bool { return !isLoopback(e.Host) }

// Allowed refuses an engine on another host unless the user allowed it
// (--allow-remote).
func (e DockerEngine) Allowed(allowRemote bool) error {
	if e.OnAnotherHost() && !allowRemote {
		return fmt.Errorf("--cluster docker: the Docker engine at %s is on another host (%s): locklab floods its servers and injects faults, so it starts them there only with --allow-remote", e.URL, e.Host)
	}
	return nil
}

// check refuses what cannot work on this engine: an engine on another host
// unless the user allowed it, and kinds that need this machine's network
// or files (the Sentinels) on an engine elsewhere.
func (e DockerEngine) check(cfg LocalConfig, allowRemote bool) error {
	if err := e.Allowed(allowRemote); err != nil {
		return err
	}
	if !e.Remote {
		return nil
	}
	ks, _, err := cfg.kinds()
	if err != nil {
		return err
	}
	for _, k := range ks {
		if k.hostNetwork {
			return fmt.Errorf("--cluster docker: %s runs on the engine's host network bound to 127.0.0.1 and mounts this machine's files, which an engine elsewhere (%s) does not reach: run it on this machine's engine", k.Server, e.URL)
		}
	}
	return nil
}

// addr is where a container's port published on the engine's host is
// reached.
func (e DockerEngine) addr(port int) string { return net.JoinHostPort(e.Host, strconv.Itoa(port)) }

// setClock sets the offset in a container's own offset file (clockInside),
// through the engine: in a running container by a rename in it (libfaketime
// never reads a half-written file; a copy replaces the file in two steps,
// and a server reading its clock in between saw no offset: 3 reads in 3000
// here), in a paused or stopped one, where nothing reads it and nothing can
// be run, by a copy.
func (c *dockerContainer) setClock(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	line := offsetString(d) + "\n"
	st, err := c.eng.State(ctx, c.id)
	if err != nil {
		return wrapDocker("inspect", c.name, err)
	}
	if st.Running && !st.Paused {
		code, out, err := c.eng.Exec(ctx, c.id, "0", []string{"sh", "-c", `printf %s "$1" > "$2.tmp" && mv "$2.tmp" "$2"`, "sh", line, containerClockFile})
		if err == nil && code != 0 {
			err = fmt.Errorf("exit %d: %.512s", code, out)
		}
		if err != nil {
			return fmt.Errorf("clock offset of %s: %w", c.name, err)
		}
	} else if err := c.eng.CopyFile(ctx, c.id, containerClockFile, []byte(line), 0o644); err != nil {
		return fmt.Errorf("clock offset of %s: %w", c.name, err)
	}
	c.offset.set(d)
	return nil
}

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster/containers"
	"github.com/locklab/locklab/impls"
)

// DockerConfig says which servers to start as containers: the same
// topology as the embedded mode, from images.
type DockerConfig struct {
	LocalConfig
	// Images names the image of each server kind; a kind missing here
	// takes PublicImages' (see ParseImages for the --image flag).
	Images map[impls.Server]string
	// AllowRemote: the engine may be on another host (--allow-remote),
	// whose published ports locklab then sends its traffic to.
	AllowRemote bool
	// Connect reaches the container engine: cluster/docker.Connect, which
	// lives in a package of its own so that programs starting no
	// containers do not link the Docker client.
	Connect Connect
}

// Connect reaches a container engine.
type Connect func(ctx context.Context) (containers.Engine, error)

// connect reaches the engine, or says that the program has none.
func (f Connect) connect(ctx context.Context) (containers.Engine, error) {
	if f == nil {
		return nil, errors.New("--cluster docker: this program has no container engine (give DockerConfig.Connect: cluster/docker.Connect)")
	}
	return f(ctx)
}

// PublicImages are the official public images a Docker cluster runs by
// default, per kind that has images of its own; pulled when the engine does
// not have them.
func PublicImages() map[impls.Server]string {
	return kindImages(func(k Kind) string { return k.PublicImage })
}

// LocalImages are the images scripts/images.sh builds from Debian's
// packages, for engines that reach no registry (`--image local`).
func LocalImages() map[impls.Server]string {
	return kindImages(func(k Kind) string { return k.LocalImage })
}

func kindImages(of func(Kind) string) map[impls.Server]string {
	out := map[impls.Server]string{}
	for _, k := range Kinds() {
		if k.ImageFrom == "" {
			out[k.Server] = of(k)
		}
	}
	return out
}

// ParseImages reads --image values: "local" (every server from
// LocalImages), "public", or SERVER=IMAGE for one server kind (mariadb is
// another name for mysql). Later values override earlier ones.
func ParseImages(values []string) (map[impls.Server]string, error) {
	out := map[impls.Server]string{}
	for _, v := range values {
		switch v {
		case "local":
			maps.Copy(out, LocalImages())
			continue
		case "public":
			maps.Copy(out, PublicImages())
			continue
		}
		kind, img, ok := strings.Cut(v, "=")
		b := impls.Server(strings.TrimSpace(kind))
		if b == "mariadb" {
			b = impls.MySQL
		}
		if _, known := PublicImages()[b]; !ok || !known || strings.TrimSpace(img) == "" {
			return nil, fmt.Errorf("--image %q: want local, public or SERVER=IMAGE with SERVER one of %s", v, strings.Join(dockerKinds(), ", "))
		}
		out[b] = strings.TrimSpace(img)
	}
	return out, nil
}

// Images is the image of every server kind: overrides where they name
// one, PublicImages' otherwise.
func Images(overrides map[impls.Server]string) map[impls.Server]string {
	out := PublicImages()
	maps.Copy(out, overrides)
	return out
}

func dockerKinds() []string {
	return sortedKindNames(func(k Kind) bool { return k.ImageFrom == "" })
}

// StartDocker starts the configured servers as containers of the Docker
// engine cfg.Connect reaches (DOCKER_HOST, ...), on a network of their
// own, each published on 127.0.0.1 only (on the engine's host, for an
// engine elsewhere: see DockerEngine) and put behind a proxy like a local
// node. Pause, kill and restart act on the whole container. On error
// nothing is left running.
//
// testcontainers' reaper (Ryuk) is an image this machine may not be able to
// pull, so it is off; a guard process removes the containers instead when
// locklab ends in a way that skips Close (killed, crashed).
func StartDocker(ctx context.Context, cfg DockerConfig) (_ *Cluster, err error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 90 * time.Second
	}
	images := Images(cfg.Images)
	eng, err := cfg.Connect.connect(ctx)
	if err != nil {
		return nil, err
	}
	engine, err := parseEngine(ctx, eng.Host())
	if err == nil {
		err = engine.check(cfg.LocalConfig, cfg.AllowRemote)
	}
	if err != nil {
		eng.Close()
		return nil, err
	}
	d := &dockerSession{eng: eng, id: randomID(), images: images, engine: engine}
	c := newCluster()
	c.docker = d
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	d.removeOrphans(ctx)
	if err := d.startGuard(); err != nil {
		return nil, err
	}
	if cfg.FakeTime && !engine.Remote || cfg.needsHostDir() {
		// The clock offset files live on the host, mounted into the
		// containers, so SetClockOffset writes them as it does locally;
		// so do the Sentinels' configuration files, which they rewrite.
		if c.dir, err = ownedTempDir(cfg.TempRoot); err != nil {
			return nil, err
		}
	}
	ks, _, err := cfg.kinds()
	if err != nil {
		return nil, err
	}
	// Pulling an image is not starting a server: StartTimeout bounds what
	// follows (ensureImage has its own bound).
	for _, k := range ks {
		if err := d.ensureImage(ctx, d.imageOf(k.Server)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if d.network, err = d.createNetwork(ctx); err != nil {
		return nil, err
	}
	// Every kind starts in parallel, and so does every container of a
	// kind: members of an ensemble become healthy only together.
	err = c.startKinds(ctx, cfg.LocalConfig, func(ctx context.Context, k Kind, n int) ([]*Node, error) {
		if k.startDocker != nil {
			return k.startDocker(ctx, c, cfg.LocalConfig, n)
		}
		specs := k.containers(c, cfg.LocalConfig, n)
		return inParallel(len(specs), func(i int) (*Node, error) { return c.startContainer(ctx, specs[i]) })
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, fmt.Errorf("containers not healthy within %v: %w", cfg.StartTimeout, err)
		}
		return nil, err
	}
	return c, nil
}

// containerSpec is one server container.
type containerSpec struct {
	name string
	// fakeTime: the server's wall clock can be moved (libfaketime from the
	// image); tcmalloc: preload it first (Redis: docs/facts.md).
	fakeTime, tcmalloc bool
	server             impls.Server
	port               string // the client port inside the container
	entrypoint         []string
	cmd                []string
	env                map[string]string
	// etcdMembers: the size of the etcd cluster (its command names the
	// host port, known only once one is chosen).
	etcdMembers int
	sysctls     map[string]string // of the container's network namespace
}

// startContainer creates and starts one container with its client port on
// a free port of 127.0.0.1, waits until it is healthy and puts a proxy in
// front of it. A port taken in the meantime means another one.
func (c *Cluster) startContainer(ctx context.Context, s containerSpec) (*Node, error) {
	d := c.docker
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		direct := d.engine.addr(ports[0])
		cmd := s.cmd
		if s.etcdMembers > 0 {
			cmd = etcdArgs(s.name, s.etcdMembers, "http://"+direct)
		}
		var clock string // the host's offset file of a container under libfaketime
		if s.fakeTime {
			if d.engine.Remote {
				clock = containerClockFile // kept in the container (docker.go: setClock)
			} else if clock, err = c.clockFile(s); err != nil {
				return nil, err
			}
		}
		ctr, err := d.create(ctx, s, cmd, ports[0], clock)
		n := &Node{Name: s.name, Server: s.server, direct: direct, ctr: ctr, health: kindNamed(s.server).health(c, direct)}
		if err != nil {
			if ctr != nil {
				ctr.remove(context.Background())
			}
			lastErr = fmt.Errorf("%s: %w", s.name, err)
			if msg := err.Error(); strings.Contains(msg, "already allocated") || strings.Contains(msg, "in use") {
				continue
			}
			return nil, lastErr
		}
		if err := waitHealthy(ctx, n); err != nil {
			if errors.Is(err, errExitedDuringStartUp) && attempt < 2 && ctx.Err() == nil {
				// A fresh container starts from the image again. Seen once,
				// on a loaded machine: MariaDB's mariadb-install-db failed
				// (242 starts after, none did); the embedded mode retries
				// the same way.
				ctr.remove(context.Background())
				lastErr = err
				continue
			}
			return n, err // kept, so Close removes it
		}
		if clock != "" {
			if err := ctr.hasFakeTime(ctx, s.tcmalloc); err != nil {
				return n, err
			}
		}
		if n.proxy, err = startProxy(s.name, direct); err != nil {
			return n, err
		}
		return n, nil
	}
	return nil, lastErr
}

// containerClockDir is where a container sees its clock offset file.
const (
	containerClockDir  = "/locklab-clock"
	containerClockFile = containerClockDir + "/" + fakeTimeFile
)

// clockFile makes the host's offset file of a container (offset 0).
func (c *Cluster) clockFile(s containerSpec) (string, error) {
	dir := filepath.Join(c.dir, s.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(dir, fakeTimeFile)
	return file, writeOffset(file, 0)
}

// hasFakeTime checks that the image has the libraries the container was
// told to preload: the dynamic loader only warns about a missing one, and
// the server's clock would then never move.
func (c *dockerContainer) hasFakeTime(ctx context.Context, tcmalloc bool) error {
	for _, lib := range preloads(tcmalloc) {
		code, _, err := c.eng.Exec(ctx, c.id, "", []string{"test", "-e", lib})
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if code != 0 {
			return fmt.Errorf("%s: its image has no %s, which server clock faults need: use the local images (scripts/images.sh, --image local)", c.name, lib)
		}
	}
	return nil
}

// ---- the session: one cluster's containers, network and guard ----

const (
	labelSession = "locklab.session"
	labelOwner   = "locklab.owner" // pid of the locklab that made it
	labelHost    = "locklab.host"  // the machine that locklab ran on
)

type dockerSession struct {
	eng     containers.Engine
	engine  DockerEngine
	id      string
	images  map[impls.Server]string
	network string
	guard   *guard
	// The network's subnet and gateway, and the last address given to a
	// container (containers are created in parallel).
	subnet   netip.Prefix
	gateway  netip.Addr
	addrMu   sync.Mutex
	lastAddr netip.Addr
	// probes are the containers beside the servers that watch for stalls
	// (RunProbe), removed with them.
	probes []*dockerContainer
}

// imageOf is the image a server kind runs from: the Sentinel topology
// runs from the Redis image.
func (d *dockerSession) imageOf(b impls.Server) string {
	return d.images[kindImage(b).Server]
}

func randomID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (d *dockerSession) labels() map[string]string {
	return map[string]string{labelSession: d.id, labelOwner: strconv.Itoa(os.Getpid()), labelHost: thisHost()}
}

// thisHost names this machine in labels: an engine elsewhere may hold the
// containers of locklabs on several machines, and a pid means something
// only on its own.
func thisHost() string {
	h, _ := os.Hostname()
	return h
}

// ensureImage pulls ref when the engine does not have it; a failed pull
// says how to build the local images instead.
func (d *dockerSession) ensureImage(ctx context.Context, ref string) error {
	if d.eng.HasImage(ctx, ref) {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := d.eng.PullImage(pctx, ref); err != nil {
		return fmt.Errorf("image %s is not on this machine and could not be pulled (%v): build the local images with scripts/images.sh and pass --image local", ref, firstLine(err.Error()))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// createNetwork makes the session's network, with an explicit subnet:
// Docker lets a container join a network with an address of its choosing
// only then (see nextAddress). The subnet is the one Docker picks itself,
// free of the host's routes and of other networks, read off a first
// network made to learn it.
func (d *dockerSession) createNetwork(ctx context.Context) (string, error) {
	name := "locklab-" + d.id
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		probe, err := d.eng.CreateNetwork(ctx, name, d.labels(), netip.Prefix{}, netip.Addr{})
		if err != nil {
			return "", fmt.Errorf("docker network %s: %w", name, err)
		}
		subnet, gateway, err := d.eng.NetworkSubnet(ctx, probe)
		if rmErr := d.eng.RemoveNetwork(ctx, probe); err == nil {
			err = rmErr
		}
		if err != nil {
			return "", fmt.Errorf("docker network %s: %w", name, err)
		}
		if _, err := d.eng.CreateNetwork(ctx, name, d.labels(), subnet, gateway); err != nil {
			lastErr = err // another network took the subnet in between
			continue
		}
		d.subnet, d.gateway, d.lastAddr = subnet.Masked(), gateway, subnet.Masked().Addr()
		return name, nil
	}
	return "", fmt.Errorf("docker network %s: %w", name, lastErr)
}

// nextAddress is a container's address on the network, its own for the
// session: given again when it is started again or rejoins after
// server-isolate. Left to Docker, a container that joins again gets the
// lowest free address: two members isolated at once that rejoin in the
// other order swap addresses, and their peers keep talking to the one
// they knew, now another server (seen: a ZooKeeper member not serving
// again within 30 s when an etcd member rejoined beside it).
func (d *dockerSession) nextAddress() (netip.Addr, error) {
	d.addrMu.Lock()
	defer d.addrMu.Unlock()
	a := d.lastAddr.Next()
	if a == d.gateway {
		a = a.Next()
	}
	if !d.subnet.Contains(a) || !d.subnet.Contains(a.Next()) { // the last is broadcast
		return netip.Addr{}, fmt.Errorf("docker network %s: no address left in %s", d.network, d.subnet)
	}
	d.lastAddr = a
	return a, nil
}

// create makes and starts one container; on error it may still return the
// container, for removal.
func (d *dockerSession) create(ctx context.Context, s containerSpec, cmd []string, hostPort int, clock string) (*dockerContainer, error) {
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	var binds []string
	var files []containers.File
	if clock != "" {
		for _, kv := range fakeTimeVars(containerClockFile, s.tcmalloc) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		if d.engine.Remote {
			// This machine's files are not the engine's: the offset
			// file lives in the container, copied in before it starts.
			files = []containers.File{{Path: containerClockFile, Content: []byte(offsetString(0) + "\n"), Mode: 0o644}}
		} else {
			binds = []string{filepath.Dir(clock) + ":" + containerClockDir}
		}
	}
	ip, err := d.nextAddress()
	if err != nil {
		return nil, err
	}
	id, err := d.eng.Run(ctx, containers.Spec{
		Image: d.imageOf(s.server), Name: "locklab-" + d.id + "-" + s.name,
		Entrypoint: s.entrypoint, Cmd: cmd, Env: env, Labels: d.labels(), Files: files,
		Binds: binds, Sysctls: s.sysctls,
		Network: d.network, Aliases: []string{s.name}, IP: ip,
		Port: s.port, PublishIP: d.engine.publishIP, PublishPort: hostPort,
	})
	var ctr *dockerContainer
	if id != "" {
		ctr = &dockerContainer{eng: d.eng, id: id, name: s.name, network: d.network, ip: ip, clockFile: clock,
			clockInside: clock != "" && d.engine.Remote, hostPort: hostPort, remote: d.engine.Remote}
	}
	return ctr, err
}

// createOnHostFrom makes and starts a container from the image of kind s
// that runs argv on the host's network (no network of the session, no port
// to publish: the server binds 127.0.0.1 itself), as the locklab user, with
// dir mounted at the same path. The Sentinel topology runs so (its
// Sentinels announce 127.0.0.1 addresses), and the replicated MariaDB
// topology for the same reasons (the replica replicates through a proxy in
// locklab, at a 127.0.0.1 address).
func (d *dockerSession) createOnHostFrom(ctx context.Context, s impls.Server, name string, argv []string, dir string) (*dockerContainer, error) {
	id, err := d.eng.Run(ctx, containers.Spec{
		Image: d.imageOf(s), Name: "locklab-" + d.id + "-" + name,
		Entrypoint: argv[:1], Cmd: argv[1:], Labels: d.labels(),
		User:        fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		HostNetwork: true, Binds: []string{dir + ":" + dir},
	})
	var ctr *dockerContainer
	if id != "" {
		ctr = &dockerContainer{eng: d.eng, id: id, name: name, onHost: true}
	}
	return ctr, err
}

// removeOrphans removes the containers and networks of a locklab that is
// gone without cleaning up (its guard killed with it).
func (d *dockerSession) removeOrphans(ctx context.Context) {
	list, err := d.eng.Containers(ctx, labelOwner)
	if err != nil {
		return
	}
	for _, ct := range list {
		if pid, err := strconv.Atoi(ct.Labels[labelOwner]); err == nil && d.mine(ct.Labels) && !alive(pid) {
			d.eng.Remove(ctx, ct.ID)
		}
	}
	nets, err := d.eng.Networks(ctx, labelOwner)
	if err != nil {
		return
	}
	for _, n := range nets {
		if pid, err := strconv.Atoi(n.Labels[labelOwner]); err == nil && d.mine(n.Labels) && !alive(pid) {
			d.eng.RemoveNetwork(ctx, n.ID)
		}
	}
}

// mine says whether labels are those of a locklab of this machine (whose
// pid alive can check): older labels name no host, and were made on an
// engine of this machine.
func (d *dockerSession) mine(labels map[string]string) bool {
	if h, ok := labels[labelHost]; ok {
		return h == thisHost()
	}
	return !d.engine.Remote
}

// close removes every container and the network, then lets the guard go.
func (d *dockerSession) close(nodes []*Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctrs := d.probes
	for _, n := range nodes {
		if n.ctr != nil {
			ctrs = append(ctrs, n.ctr)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ctrs))
	for i, ctr := range ctrs {
		wg.Add(1)
		go func(i int, ctr *dockerContainer) { defer wg.Done(); errs[i] = ctr.remove(ctx) }(i, ctr)
	}
	wg.Wait()
	if d.network != "" {
		if err := d.eng.RemoveNetwork(ctx, d.network); err != nil {
			errs = append(errs, fmt.Errorf("docker network %s: %w", d.network, err))
		}
	}
	if d.guard != nil {
		d.guard.release()
	}
	d.eng.Close()
	return errors.Join(errs...)
}

// ---- one container ----

type dockerContainer struct {
	eng     containers.Engine
	id      string
	name    string // the node's name, its alias on the network
	network string
	ip      netip.Addr // its address on the network (nextAddress)
	// clockFile is the host's file of the container's clock offset
	// (libfaketime reads it through a mount); "" when not under it.
	// clockInside: the file is the container's own (an engine elsewhere,
	// which cannot mount this machine's files), set through the engine;
	// offset is the last set.
	clockFile   string
	clockInside bool
	offset      lastOffset
	// remote: the engine is elsewhere, so its ports are not this
	// machine's to hold.
	remote bool
	// onHost: on the host's network (createOnHost), which it cannot be
	// cut from.
	onHost bool
	// hostPort is its port published on 127.0.0.1 (0 on the host's
	// network), held while the container is stopped (see holdPorts): the
	// engine frees it at the stop and binds it again at the start.
	hostPort int
	heldMu   sync.Mutex // a fault's kill and Close's remove may meet
	held     *portHold
}

// pause and resume are asked of the engine again when they fail, as a
// user's fault commands are (askedAgain).
func (c *dockerContainer) pause() error {
	ctx := context.Background()
	return wrapDocker("pause", c.name, askedAgain(ctx, func() error { return c.eng.Pause(ctx, c.id) }))
}

func (c *dockerContainer) resume() error {
	ctx := context.Background()
	return wrapDocker("unpause", c.name, askedAgain(ctx, func() error { return c.eng.Unpause(ctx, c.id) }))
}

// kill ends every process of the container at once and returns when the
// engine reports it stopped. A paused container is killed too. holdPort
// keeps its published port from other programs until its start; a restart,
// which starts it again at once, does without (the engine lets the port go
// up to a second after the stop, and holding it would wait for that).
func (c *dockerContainer) kill(holdPort bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	running, _, err := c.state(ctx)
	if err != nil {
		return err
	}
	if running {
		if err := c.eng.Kill(ctx, c.id, "KILL"); err != nil && !alreadyExited(err) {
			return wrapDocker("kill", c.name, err)
		}
	}
	for {
		running, _, err := c.state(ctx)
		if err != nil {
			return err
		}
		if !running {
			if holdPort {
				c.holdPort()
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill %s: still running after 30 s", c.name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// alreadyExited reports a kill refused because the container's process
// has exited already: not running, or a zombie the engine has not reaped
// yet (seen under load: "PID 20875 is zombie and can not be killed"). The
// wait for the stopped state follows either way.
func alreadyExited(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "is not running") || strings.Contains(msg, "is zombie")
}

// isolate disconnects the container from the cluster's network: its peers
// and its published port (the clients) lose it alike.
func (c *dockerContainer) isolate() error {
	return wrapDocker("network disconnect", c.name, c.eng.Disconnect(context.Background(), c.network, c.id))
}

// rejoin connects it again under its name and address.
func (c *dockerContainer) rejoin(ctx context.Context) error {
	return wrapDocker("network connect", c.name, c.eng.Connect(ctx, c.network, c.id, c.name, c.ip))
}

// holdPort keeps the stopped container's published port from other
// programs until start.
func (c *dockerContainer) holdPort() {
	if c.hostPort == 0 || c.remote {
		return
	}
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	c.held.release()
	c.held = holdPortsWithin([]int{c.hostPort}, time.Second)
}

// releasePort gives the held port back, for the engine to bind.
func (c *dockerContainer) releasePort() {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	c.held.release()
	c.held = nil
}

func (c *dockerContainer) start(ctx context.Context) error {
	c.releasePort()
	return wrapDocker("start", c.name, c.eng.Start(ctx, c.id))
}

// state says whether the container runs, and its main process's pid.
func (c *dockerContainer) state(ctx context.Context) (running bool, pid int, err error) {
	st, err := c.eng.State(ctx, c.id)
	if err != nil {
		return false, 0, wrapDocker("inspect", c.name, err)
	}
	return st.Running, st.Pid, nil
}

func (c *dockerContainer) remove(ctx context.Context) error {
	c.releasePort()
	err := c.eng.Remove(ctx, c.id)
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "no such container") {
		return nil
	}
	return wrapDocker("remove", c.name, err)
}

// logTail is the last lines the container's server wrote.
func (c *dockerContainer) logTail(n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := c.eng.Logs(ctx, c.id, n)
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(out, "\n", " | ")), " ")
}

func wrapDocker(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("docker %s %s: %w", op, name, err)
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/impls"
)

// Kind is one kind of server: everything the rest of locklab would
// otherwise switch on. Each kind declares itself in a file of its own
// (redis.go, sentinel.go, mariadb.go, mariadb_replicated.go, zookeeper.go,
// postgres.go, etcd.go)
// and Kinds lists them: adding a kind is that file and one line there (and
// its constant in impls, which the approaches name).
type Kind struct {
	Server impls.Server
	// About is what a cluster of it is, for `cluster up` and `list`.
	About string
	// Nodes is how many nodes a cluster for its approaches runs. A kind
	// that is a fixed topology (the Sentinels) starts it for any count.
	Nodes int
	// OnRequest: `cluster up` starts it only when asked by name.
	OnRequest bool
	// Topology: its nodes do different jobs (the Sentinels: a primary, a
	// replica, three Sentinels), so a fault aims at a role (node: leader,
	// the primary), not at a count of alike nodes.
	Topology bool
	// FailsOver: the failover fault can promote its replica (Sentinel's
	// election); the nodes say which of them can be failed over.
	FailsOver bool
	// Lanes: its nodes are servers of their own that start in a fraction
	// of a second, so a parallel run starts more of them than Nodes for its
	// cases to run side by side: a node of their own for its approaches
	// that use one node, a second set of Nodes for the others.
	Lanes bool
	// Ensembles: its Nodes make one ensemble (a quorum), which a parallel
	// run's cases faulting a server would wait for one after another, so
	// it may start more ensembles of Nodes members beside it, each a lane
	// of its own (LocalConfig.Ensembles).
	Ensembles bool
	// Settings are what a scenario may set of how its servers run.
	Settings []Setting
	// StartCost is about what starting and stopping a cluster of it
	// costs on this machine, measured on a 2-core machine (a matrix's
	// estimate adds it to each start of the servers).
	StartCost time.Duration
	// Binaries are the programs the embedded mode runs, each with the
	// Debian package that has it (scripts/deps.sh installs them).
	Binaries []Binary
	// PublicImage and LocalImage are its images in Docker mode (the public
	// one, and the one scripts/images.sh builds); ImageFrom names another
	// kind whose images it runs from instead.
	PublicImage, LocalImage string
	ImageFrom               impls.Server
	// NoFakeTime says why its clock cannot be moved; "": it runs under
	// libfaketime when a plan has a server clock fault.
	NoFakeTime string
	// hostNetwork: in Docker mode its containers run on the host's
	// network (the Sentinels announce 127.0.0.1 addresses, as in the
	// embedded mode), which they cannot be cut from, and mount a directory
	// of the host (the Sentinels rewrite their configuration files).
	hostNetwork bool

	// nodeName names its i-th node (0-based).
	nodeName func(i int) string
	// startLocal starts n nodes of it on this machine.
	startLocal func(ctx context.Context, c *Cluster, cfg LocalConfig, n int) ([]*Node, error)
	// containers are its n nodes as containers, which run the servers as
	// the embedded mode does, with the paths of Debian's packages
	// (scripts/images.sh) and, where they differ, of the official images
	// (a killed container keeps its file system, so a restart finds its
	// data where it left it); startDocker instead starts
	// a kind that is not a set of plain containers (the Sentinels).
	containers  func(c *Cluster, cfg LocalConfig, n int) []containerSpec
	startDocker func(ctx context.Context, c *Cluster, cfg LocalConfig, n int) ([]*Node, error)
	// health checks a node it runs, at its direct address.
	health func(c *Cluster, a string) func(context.Context) error
	// speaks checks that a server of it answers at a, without credentials:
	// the health check of a server the user runs.
	speaks func(ctx context.Context, a string) error
	// endpoint adds node n, reached at a, to what its clients are given
	// (addressOnly, withDSN).
	endpoint func(s *impls.Servers, c *Cluster, n *Node, a string)
	// role says whether n leads; nil: every node is standalone.
	role func(ctx context.Context, n *Node) (string, error)
	// external is how the user's servers of it are listed in an external
	// config; nil: they cannot be.
	external *externalForm
	// compose writes its services into compose.yaml.
	compose func(w *composeWriter)
}

// addressOnly: a client is given each node's address.
func addressOnly(s *impls.Servers, _ *Cluster, _ *Node, a string) { s.Addrs = append(s.Addrs, a) }

// withDSN: a client is given each node's address and the DSN that logs in
// to it there, own(a) for a server locklab runs.
func withDSN(own func(a string) string) func(s *impls.Servers, c *Cluster, n *Node, a string) {
	return func(s *impls.Servers, c *Cluster, n *Node, a string) {
		s.Addrs, s.DSNs = append(s.Addrs, a), append(s.DSNs, c.dsnOf(n.Server, a, own))
	}
}

// containerStart is what a start of containers costs, whatever they run,
// as measured on a 2-core machine.
const containerStart = 3 * time.Second

// StartCost is about what a start of servers of the kinds ss costs: the
// slowest kind's (StartCost), any container's in Docker mode; a kind not
// known costs a container's.
func StartCost(docker bool, ss ...impls.Server) time.Duration {
	var cost time.Duration
	for _, s := range ss {
		k, err := KindOf(s)
		if docker || err != nil {
			return containerStart
		}
		cost = max(cost, k.StartCost)
	}
	return cost
}

// Binary is a program a kind runs and the Debian package that has it.
type Binary struct{ Path, Package string }

// Kinds returns every server kind, in start order: the one list.
func Kinds() []Kind {
	return []Kind{redisKind(), mariadbKind(), zooKeeperKind(), postgresKind(), etcdKind(), sentinelKind(),
		mariadbReplicatedKind(), mariadbSemiSyncKind()}
}

// KindOf returns the kind of s.
func KindOf(s impls.Server) (Kind, error) {
	for _, k := range Kinds() {
		if k.Server == s {
			return k, nil
		}
	}
	return Kind{}, fmt.Errorf("unknown server kind %q (known: %s)", s, strings.Join(KindNames(), ", "))
}

// KindNames are the kinds' names, in start order.
func KindNames() []string {
	ks := Kinds()
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k.Server)
	}
	return out
}

// image is the kind whose images k runs from.
func (k Kind) image() Kind {
	if k.ImageFrom != "" {
		if from, err := KindOf(k.ImageFrom); err == nil {
			return from
		}
	}
	return k
}

// checkBinaries says which program of k is missing and how to install it.
func (k Kind) checkBinaries() error {
	for _, bin := range k.Binaries {
		var err error
		if filepath.IsAbs(bin.Path) {
			_, err = os.Stat(bin.Path)
		} else {
			_, err = exec.LookPath(bin.Path)
		}
		if err != nil {
			return fmt.Errorf("%s not found: install the Debian package %s (apt-get install %s)", bin.Path, bin.Package, bin.Package)
		}
	}
	return nil
}

// LocalConfig says which servers to start. A kind a run does not use is
// not started.
type LocalConfig struct {
	// Nodes is how many nodes of each kind; a kind missing or at 0 is not
	// started (ForServers gives each its default).
	Nodes map[impls.Server]int
	// Ensembles is, for a kind whose nodes make an ensemble
	// (Kind.Ensembles), how many ensembles its Nodes form, of equal size
	// and each knowing only its own members, in order; 0: one.
	Ensembles map[impls.Server]int
	// Settings are how the servers run where not at their kinds' defaults
	// (Kind.Settings: Redis's persistence).
	Settings Settings
	// FakeTime starts the servers that can take it under libfaketime, so a
	// server-clock fault can move their wall clock during the run.
	FakeTime     bool
	StartTimeout time.Duration // bound on waiting for all nodes to be healthy; default 60s
	TempRoot     string        // where the temp dir goes; default os.TempDir()
}

// ensembleSize is how many of the n nodes of kind s make each ensemble:
// n unless Ensembles splits them evenly.
func (cfg LocalConfig) ensembleSize(s impls.Server, n int) int {
	if e := cfg.Ensembles[s]; e > 1 && n%e == 0 {
		return n / e
	}
	return n
}

// ForServers returns the LocalConfig that serves the given kinds, each
// with its default number of nodes.
func ForServers(ss ...impls.Server) LocalConfig {
	c := LocalConfig{Nodes: map[impls.Server]int{}, Ensembles: map[impls.Server]int{}}
	for _, s := range ss {
		if k, err := KindOf(s); err == nil {
			c.Nodes[s] = k.Nodes
		}
	}
	return c
}

// kinds are the kinds cfg starts, in start order, with their node counts;
// an unknown kind, or a setting no kind takes, is an error.
func (cfg LocalConfig) kinds() ([]Kind, []int, error) {
	for s := range cfg.Nodes {
		if _, err := KindOf(s); err != nil {
			return nil, nil, err
		}
	}
	if err := cfg.Settings.check(); err != nil {
		return nil, nil, err
	}
	var ks []Kind
	var ns []int
	for _, k := range Kinds() {
		if n := cfg.Nodes[k.Server]; n > 0 {
			ks, ns = append(ks, k), append(ns, n)
		}
	}
	return ks, ns, nil
}

// startKinds runs start for every kind cfg asks for, all in parallel (the
// slowest, a JVM or an ensemble, sets the pace), and keeps every node
// that was created, so Close stops it even on error.
func (c *Cluster) startKinds(ctx context.Context, cfg LocalConfig, start func(context.Context, Kind, int) ([]*Node, error)) error {
	ks, ns, err := cfg.kinds()
	if err != nil {
		return err
	}
	results := make([][]*Node, len(ks))
	errs := make([]error, len(ks))
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = start(ctx, k, ns[i])
		}(i)
	}
	wg.Wait()
	for _, nodes := range results {
		for _, n := range nodes {
			if n != nil {
				c.nodes = append(c.nodes, n)
			}
		}
	}
	return errors.Join(errs...)
}

// inParallel runs start for i in 0..n-1 at once and returns what each
// made, in order (nil where it made nothing), with their errors joined.
func inParallel(n int, start func(i int) (*Node, error)) ([]*Node, error) {
	nodes := make([]*Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			nodes[i], errs[i] = start(i)
		}(i)
	}
	wg.Wait()
	return nodes, errors.Join(errs...)
}

// kindOfNode is n's kind; a node is only ever made for a known kind.
func kindOfNode(n *Node) Kind { return kindNamed(n.Server) }

// kindNamed is the kind of s, known to be one.
func kindNamed(s impls.Server) Kind {
	k, _ := KindOf(s)
	return k
}

// sortedKindNames are the names of the kinds some predicate keeps, sorted.
func sortedKindNames(keep func(Kind) bool) []string {
	var out []string
	for _, k := range Kinds() {
		if keep(k) {
			out = append(out, string(k.Server))
		}
	}
	sort.Strings(out)
	return out
}

// needsHostDir says whether a kind cfg starts mounts a host directory.
func (cfg LocalConfig) needsHostDir() bool {
	ks, _, _ := cfg.kinds()
	for _, k := range ks {
		if k.hostNetwork {
			return true
		}
	}
	return false
}

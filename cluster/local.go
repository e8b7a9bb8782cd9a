package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/impls"
	"github.com/locklab/locklab/spawn"
)

// LocalConfig says which servers to start. A backend a run does not use is
// not started.
type LocalConfig struct {
	RedisNodes     int  // independent redis-server masters (Redlock wants 5)
	MySQL          bool // one MariaDB server
	ZooKeeperNodes int  // ensemble size (3 for a quorum that survives one loss)
	Postgres       bool // one PostgreSQL server
	EtcdNodes      int  // etcd cluster size
	// RedisSentinel: a Redis primary, one replica and three Sentinels.
	RedisSentinel bool
	// RedisPersistence is how every Redis node persists: "" or "none"
	// (nothing: a restart loses every key), "aof-everysec", "aof-always",
	// "rdb".
	RedisPersistence string
	// FakeTime starts the servers that can take it under libfaketime, so a
	// server-clock fault can move their wall clock during the run.
	FakeTime     bool
	StartTimeout time.Duration // bound on waiting for all nodes to be healthy; default 60s
	TempRoot     string        // where the temp dir goes; default os.TempDir()
}

// servers are the server kinds whose programs (binaries, images) cfg runs,
// in start order: the Sentinel topology runs Redis's.
func (cfg LocalConfig) servers() []impls.Server {
	need := map[impls.Server]bool{impls.Redis: cfg.RedisNodes > 0 || cfg.RedisSentinel, impls.MySQL: cfg.MySQL, impls.ZooKeeper: cfg.ZooKeeperNodes > 0,
		impls.Postgres: cfg.Postgres, impls.Etcd: cfg.EtcdNodes > 0}
	var out []impls.Server
	for _, b := range []impls.Server{impls.Redis, impls.MySQL, impls.ZooKeeper, impls.Postgres, impls.Etcd} {
		if need[b] {
			out = append(out, b)
		}
	}
	return out
}

// ForServers returns the LocalConfig that serves the given backends.
func ForServers(bs ...impls.Server) LocalConfig {
	var c LocalConfig
	for _, b := range bs {
		switch b {
		case impls.Redis:
			c.RedisNodes = 5
		case impls.MySQL:
			c.MySQL = true
		case impls.ZooKeeper:
			c.ZooKeeperNodes = 3
		case impls.Postgres:
			c.Postgres = true
		case impls.Etcd:
			c.EtcdNodes = 3
		case impls.RedisSentinel:
			c.RedisSentinel = true
		}
	}
	return c
}

// binaries each backend needs, with the Debian package that provides them.
var binaries = map[impls.Server][][2]string{
	impls.Redis:     {{"redis-server", "redis-server"}},
	impls.MySQL:     {{"mariadbd", "mariadb-server"}, {"mariadb-install-db", "mariadb-server"}},
	impls.ZooKeeper: {{"java", "zookeeper"}, {zkJar, "zookeeper"}},
	impls.Postgres:  {{pgBin + "/postgres", "postgresql"}, {pgBin + "/initdb", "postgresql"}},
	impls.Etcd:      {{"etcd", "etcd-server"}},
}

const zkJar = "/usr/share/java/zookeeper.jar"

func checkBinaries(b impls.Server) error {
	for _, bin := range binaries[b] {
		var err error
		if filepath.IsAbs(bin[0]) {
			_, err = os.Stat(bin[0])
		} else {
			_, err = exec.LookPath(bin[0])
		}
		if err != nil {
			return fmt.Errorf("%s not found: install the Debian package %s (apt-get install %s)", bin[0], bin[1], bin[1])
		}
	}
	return nil
}

// StartLocal starts the configured servers on 127.0.0.1 with free ports in a
// fresh temp dir, puts a proxy in front of each, and waits until all are
// healthy. On error nothing is left running.
func StartLocal(ctx context.Context, cfg LocalConfig) (_ *Cluster, err error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	for _, b := range cfg.servers() {
		if err := checkBinaries(b); err != nil {
			return nil, err
		}
	}
	dir, err := ownedTempDir(cfg.TempRoot)
	if err != nil {
		return nil, err
	}
	c := newCluster()
	c.dir = dir
	c.spawn = spawn.New()
	defer func() {
		if err != nil {
			c.Close()
		}
	}()

	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	// Every node starts in parallel; the slowest (the JVM) sets the pace.
	type starter func(context.Context) ([]*Node, error)
	var starters []starter
	for i := 0; i < cfg.RedisNodes; i++ {
		i := i
		starters = append(starters, func(ctx context.Context) ([]*Node, error) {
			n, err := c.startRedis(ctx, i, redisOptions{persistence: cfg.RedisPersistence, fakeTime: cfg.FakeTime})
			return []*Node{n}, err
		})
	}
	if cfg.MySQL {
		starters = append(starters, func(ctx context.Context) ([]*Node, error) {
			n, err := c.startMariaDB(ctx)
			if err == nil && cfg.FakeTime {
				err = restartUnderFakeTime(ctx, []*Node{n})
			}
			return []*Node{n}, err
		})
	}
	if cfg.ZooKeeperNodes > 0 {
		starters = append(starters, func(ctx context.Context) ([]*Node, error) {
			ns, err := c.startZooKeeper(ctx, cfg.ZooKeeperNodes)
			if err == nil && cfg.FakeTime {
				err = restartUnderFakeTime(ctx, ns)
			}
			return ns, err
		})
	}
	if cfg.Postgres {
		starters = append(starters, func(ctx context.Context) ([]*Node, error) {
			n, err := c.startPostgres(ctx)
			return []*Node{n}, err
		})
	}
	if cfg.EtcdNodes > 0 {
		starters = append(starters, func(ctx context.Context) ([]*Node, error) {
			return c.startEtcd(ctx, cfg.EtcdNodes)
		})
	}
	if cfg.RedisSentinel {
		starters = append(starters, c.startRedisSentinel)
	}
	results := make([][]*Node, len(starters))
	errs := make([]error, len(starters))
	var wg sync.WaitGroup
	for i, s := range starters {
		wg.Add(1)
		go func(i int, s starter) {
			defer wg.Done()
			results[i], errs[i] = s(ctx)
		}(i, s)
	}
	wg.Wait()
	// Keep every node that was created, so Close stops it even on error.
	for _, ns := range results {
		for _, n := range ns {
			if n != nil {
				c.nodes = append(c.nodes, n)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, fmt.Errorf("servers not healthy within %v: %w", cfg.StartTimeout, err)
		}
		return nil, err
	}
	return c, nil
}

// startNode runs one server with fresh free ports, retrying with other ports
// when the chosen one was taken in the meantime ("port in use").
func (c *Cluster) startNode(ctx context.Context, name string, backend impls.Server, build func(ports []int) (*process, string, func(context.Context) error, error), nports int) (*Node, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(nports)
		if err != nil {
			return nil, err
		}
		proc, direct, health, err := build(ports)
		if err != nil {
			return nil, err
		}
		proc.ports = ports
		n := &Node{Name: name, Server: backend, direct: direct, proc: proc, health: health}
		if err := proc.start(); err != nil {
			return nil, err
		}
		err = waitHealthy(ctx, n)
		if err == nil {
			n.proxy, err = c.addProxy(name, direct)
			if err != nil {
				proc.stop(0)
				return nil, err
			}
			return n, nil
		}
		proc.stop(0)
		lastErr = err
		if !strings.Contains(strings.ToLower(proc.logTail(20)), "in use") {
			return nil, err
		}
	}
	return nil, lastErr
}

// ownedTempDir makes the temp dir of a cluster under root (default
// os.TempDir()), with this process's pid in it, after removing those of
// processes that are gone.
func ownedTempDir(root string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	removeStaleDirs(root)
	dir, err := os.MkdirTemp(root, "locklab-")
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("temp dir: %w", err)
	}
	return dir, nil
}

// alive says whether process pid exists.
func alive(pid int) bool {
	return pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// removeStaleDirs deletes temp dirs left by a locklab that was killed before
// it could clean up (its servers died with it through Pdeathsig).
func removeStaleDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "locklab-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if !alive(pid) {
			os.RemoveAll(d)
		}
	}
}
